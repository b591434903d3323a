"""Rules over a recipe job and what the SDK derives from the recipe, recorded as injections.

Each rule is a small function of the job's context and the merged, resolved recipe; its
problems carry the recipe's own dotted path (``recipe.trainer.num_nodes``). The GPU rules are
the training adapter's checks (aws/sagemaker-hyperpod-training-adapter-for-nemo,
``conf/config_schemas.py``: ``validate_distributed_degrees``, ``BaseTrainerConfig``,
``BaseModelConfig``), which otherwise run only inside the container, minutes into a paid job.
Trainium recipes run neuronx-distributed-training under PyTorch Lightning, whose keys differ.
Nova and LLM fine-tuning recipes have keys of their own: only what the SDK reads is checked.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from safe_estimators._bounds import divisors
from safe_estimators._context import Context
from safe_estimators._facts.sdk_files import default_target, sdk_version
from safe_estimators._facts.targets import MODEL_TRAINER
from safe_estimators._facts.versions import parse_version
from safe_estimators._problems import (
    Fix,
    Problem,
    count,
    found_by,
    problem_source,
    removing,
    setting,
    tagged,
    warning,
)
from safe_estimators._recipes import facts
from safe_estimators._recipes.load import Recipe, recipe_kind
from safe_estimators._resolved import Injection
from safe_estimators._spec import JobSpec

RecipeRule = Callable[[Context, Recipe], Iterator[Problem]]


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = data.get(name)
    return value if isinstance(value, Mapping) else {}


def _int(value: object) -> int | None:
    return value if type(value) is int else None


def _device(ctx: Context) -> str:
    return facts.device_type(ctx.instance_name)


def _devices_per_instance(ctx: Context) -> int | None:
    """Processes per instance under torchrun: one per GPU, or per NeuronCore on Trainium."""
    if ctx.instance is None:
        return None
    if _device(ctx) == "trainium":
        return ctx.instance.neuron_cores
    return ctx.instance.gpu_count or None


def _uses_smp(recipe: Recipe) -> bool:
    value = recipe.data.get("use_smp_model", facts.ADAPTER_DEFAULTS["use_smp_model"])
    return value is not False


# --- what every recipe job needs ---------------------------------------------------------------


def _gpu_script(ctx: Context, model_type: str) -> tuple[str, str] | None:
    """The adapter's (folder, script) the job's SDK path picks for a GPU model type."""
    if ctx.target == MODEL_TRAINER:
        return facts.from_recipe_script(model_type)
    return facts.gpu_script(model_type)


def recipe_machines(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """The SDK decides the device from instance_type; it takes no instance groups."""
    if ctx.spec.instance_groups is not None:
        yield Problem(
            "instance_groups",
            "a training recipe runs on one instance type; the SDK needs instance_type "
            "(\"Must pass instance type to estimator when using training recipes\").",
            "use instance_type and instance_count.",
        )
        return
    name = ctx.instance_name
    if recipe.kind == "standard" and name and _device(ctx) == "cpu":
        yield Problem(
            "instance_type",
            f"{name} has neither GPUs nor Trainium; the SDK runs training recipes on ml.p*, "
            "ml.g* and ml.trn* types only (\"Devices of type cpu are not supported with "
            "training recipes\").",
            "pick a GPU type (ml.p5.48xlarge, ml.p4d.24xlarge, ml.g5.48xlarge) or a Trainium "
            "type (ml.trn1.32xlarge).",
        )


def recipe_sources(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """source_dir must be a local folder; the adapter URL must be one the SDK clones."""
    source_dir = ctx.spec.source_dir if ctx.target != MODEL_TRAINER else None  # not used there
    if source_dir is not None and not (isinstance(source_dir, str) and os.path.isdir(source_dir)):
        yield Problem(
            "source_dir",
            f"{source_dir!r} is not a local folder; the SDK copies the recipe's script into it "
            "(\"When using training_recipe, source_dir must be a local directory\").",
            "create the folder, or leave source_dir out (the SDK then uses the current folder).",
        )
    adapter = os.environ.get(facts.ADAPTER_VARIABLE)
    if (
        recipe.kind == "standard"
        and _device(ctx) == "gpu"
        and adapter
        and not adapter.startswith(facts.CLONED_SCHEMES)
    ):
        yield Problem(
            f"${facts.ADAPTER_VARIABLE}",
            f"is {adapter!r}; the SDK clones only https://, git@ and ssh:// URLs and skips any "
            "other without a word, then cannot find the adapter's script.",
            "point it at an https:// or ssh:// URL of the adapter repository, or unset it.",
        )


def recipe_image(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """Nova, evaluation and LLM fine-tuning recipes have no default image in the SDK; nor has
    sagemaker 3's ModelTrainer.from_recipe for any recipe (it sends a placeholder)."""
    placeholder = facts.from_recipe_placeholder_image()
    if (
        ctx.target == MODEL_TRAINER
        and ctx.spec.trainer is not None  # in the estimator's words: the estimator's image
        and recipe.kind == "standard"
        and ctx.spec.image_uri is None
        and placeholder is not None
    ):
        wanted = facts.image_description(_device(ctx))
        yield Problem(
            "training_image",
            f"is not given; sagemaker {sdk_version()}'s ModelTrainer.from_recipe then sends "
            f"the training image {placeholder!r} (its lookup of the recipe image, {wanted} in "
            "training_recipes.json, is commented out), and the job cannot start.",
            "pass the recipe's image as training_image, e.g. the SMP v2 image for GPU recipes "
            "(658645717510.dkr.ecr.<region>.amazonaws.com/smdistributed-modelparallel:2.4.1-"
            "gpu-py311-cu121 in us-west-2 and us-east-1; sagemaker.image_uris has the others).",
        )
        return
    if recipe.kind != "standard" and ctx.spec.image_uri is None:
        kind = "an LLM fine-tuning" if recipe.kind == "llmft" else "a Nova"
        yield Problem(
            "image_uri",
            f"{recipe.name} is {kind} recipe, which the SDK runs only with an image_uri "
            "(\"Must supply image_uri when running llmft or nova jobs\").",
            "set image_uri to the container the recipe's documentation names for it.",
        )


def recipe_structure(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """What the SDK reads from a standard recipe before it builds anything."""
    if recipe.kind != "standard":
        return
    if not isinstance(recipe.data.get("trainer"), Mapping):
        yield Problem(
            "recipe.trainer",
            "is missing; the SDK needs it (\"Supplied recipe does not contain required field "
            "trainer\").",
            "add a trainer section with devices and num_nodes.",
        )
    if _device(ctx) != "gpu":
        return
    scripts = facts.FROM_RECIPE_GPU_SCRIPTS if ctx.target == MODEL_TRAINER else facts.GPU_SCRIPTS
    model_type = _section(recipe.data, "model").get("model_type")
    if not isinstance(model_type, str):
        yield Problem(
            "recipe.model.model_type",
            "is missing; on GPUs the SDK picks the adapter's script by it (\"Supplied recipe "
            "does not contain required field model_type\").",
            f"set it to one of {', '.join(scripts)}.",
        )
    elif _gpu_script(ctx, model_type) is None:
        yield Problem(
            "recipe.model.model_type",
            f"is {model_type!r}; the SDK has an adapter script for {', '.join(scripts)} "
            f"only (\"Model type {model_type} not supported\").",
            "use a model type the adapter has a script for.",
        )


# --- devices and nodes -------------------------------------------------------------------------


def _override(path: str, value: object) -> Fix:
    """A recipe key set through recipe_overrides (``path`` is the recipe's dotted key)."""
    nested: object = value
    for key in reversed(path.split(".")):
        nested = {key: nested}
    return Fix(((f"recipe_overrides.{path}", value),), f"set recipe_overrides={nested!r}")


def recipe_devices(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """trainer.devices must be the processes torchrun starts on each instance."""
    if recipe.kind != "standard":
        return
    devices = _section(recipe.data, "trainer").get("devices")
    per_instance = _devices_per_instance(ctx)
    if type(devices) is not int or per_instance is None or devices == per_instance:
        return
    if _device(ctx) == "trainium":
        yield from _trainium_devices(ctx, devices, per_instance)
        return
    yield Problem(
        "recipe.trainer.devices",
        f"is {devices}, but {ctx.instance_name} has {count(per_instance, 'GPU')} and the job "
        "starts one process per GPU; the adapter refuses it: \"'devices' does not equal actual "
        "number of devices\".",
        f"pick an instance type with {count(devices, 'GPU')}.",
        fixes=(_override("trainer.devices", per_instance),),
    )


def _trainium_devices(ctx: Context, devices: int, per_instance: int) -> Iterator[Problem]:
    """neuronx-distributed-training builds a Lightning Trainer on the XLA accelerator, whose
    device parser takes only 1 or the device count (lightning_fabric/accelerators/xla.py,
    ``_check_tpu_devices_valid``: "`devices` can only be 'auto', 1, N ..."). Its own launcher
    (``nlp_overrides._NLPXLALauncher.launch``) replaces Lightning's subprocess launcher, the one
    that checks devices x num_nodes against WORLD_SIZE, so that product is not checked."""
    fix = _override("trainer.devices", per_instance)
    if devices == 1:  # accepted; the trainer then counts one device a node (exp_manager ranks)
        yield warning(
            "recipe.trainer.devices",
            f"is 1, but {ctx.instance_name} starts {per_instance} processes (one per "
            "NeuronCore); Lightning accepts 1, and neuronx-distributed-training then numbers "
            "the ranks of its logs as if each node had one device.",
            fixes=(fix,),
        )
        return
    # Trainium2's count depends on the logical NeuronCore setting (neuronx-distributed-training
    # utils.get_lnc_size: 2 unless trainer.lnc says otherwise): a warning there; trn1's is fixed.
    sure = ctx.instance_name.startswith(facts.FIXED_CORE_FAMILIES)
    yield Problem(
        "recipe.trainer.devices",
        f"is {devices}, but {ctx.instance_name} has {count(per_instance, 'NeuronCore')} and the "
        f"job starts one process per NeuronCore; Lightning's XLA accelerator takes only 1 or "
        f"{per_instance} (\"`devices` can only be 'auto', 1, {per_instance} ...\").",
        f"pick an instance type with {count(devices, 'NeuronCore')}.",
        "error" if sure else "warning",
        fixes=(fix,),
    )


def recipe_nodes(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """trainer.num_nodes must be the instances the job has (the SDK does not change it)."""
    if recipe.kind != "standard":
        return
    nodes = _int(_section(recipe.data, "trainer").get("num_nodes"))
    instances = ctx.instance_count
    if nodes is None or nodes == instances:
        return
    fixes = [_override("trainer.num_nodes", instances)]
    hint = ""
    per_instance = _devices_per_instance(ctx)
    product = _degree_product(recipe, ctx)
    if per_instance and product and (instances * per_instance) % product[0]:
        hint = (
            f"{fixes[0].text} and lower the degrees ({product[1]} = {product[0]}) to divide "
            f"{instances * per_instance} processes."
        )
        fixes = []
    fixes.append(setting(("instance_count", nodes)))
    yield Problem(
        "recipe.trainer.num_nodes",
        f"is {nodes}, but the job has {count(instances, 'instance')} (instance_count); the SDK "
        "keeps the recipe's value (\"Ignoring trainer -> num_nodes\") and the training fails "
        "at start (\"'num_nodes' does not equal actual number of nodes\").",
        hint,
        fixes=tuple(fixes),
    )


def recipe_finetuning_trainer(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """An LLM fine-tuning recipe's trainer and batch sizes, as AWS's launcher validates them
    (sagemaker-hyperpod-recipes main, validations_wrapper.py: ``LLMFTRecipeValidator`` for a
    run.model_type starting with llm_finetuning_aws; schema/llmft_schema_validation.py:
    ``devices: int = Field(gt=0)``, ``num_nodes: int = Field(gt=0)``, "train_batch_size must be
    >= micro_train_batch_size"). Warnings: the launcher runs these before a HyperPod launch,
    and a training job through the SDK never runs the launcher.

    trainer.devices is not checked against the instance type: the SDK gives these jobs no
    distribution (``_setup_for_llmft_recipe``: ``distribution = {}``), so the image starts its
    own processes, and AWS's own ``devices: 8`` recipes list 4-GPU types (ml.g5.12xlarge) among
    their instance_types; the launcher reads devices as torchrun's processes per node only on
    HyperPod clusters (launcher/nemo/stages.py, ``get_ntasks_per_node``)."""
    run = _section(recipe.data, "run")
    if recipe.kind != "llmft" or not str(run.get("model_type", "")).startswith(
        "llm_finetuning_aws"
    ):
        return
    trainer = _section(recipe.data, "trainer")
    for key in ("devices", "num_nodes"):
        value = trainer.get(key)
        if key in trainer and (type(value) is not int or value < 1):
            yield warning(
                f"recipe.trainer.{key}",
                f"is {value!r}; AWS's recipe launcher takes only a whole number of at least 1 "
                "(LLMFTTrainerValidator).",
                "write the number you mean.",
                fixes=(_override(f"trainer.{key}", 1),),
            )
    arguments = _section(_section(recipe.data, "training_config"), "training_args")
    micro, total = arguments.get("micro_train_batch_size"), arguments.get("train_batch_size")
    if type(micro) is int and type(total) is int and 0 < total < micro:
        yield warning(
            "recipe.training_config.training_args.train_batch_size",
            f"is {total}, below micro_train_batch_size {micro}; AWS's recipe launcher refuses "
            "it (\"train_batch_size must be >= micro_train_batch_size\").",
            "",
            fixes=(
                _override("training_config.training_args.train_batch_size", micro),
                _override("training_config.training_args.micro_train_batch_size", total),
            ),
        )


def _degree_product(recipe: Recipe, ctx: Context) -> tuple[int, str, str] | None:
    """The degrees that must divide the world: (product, shown, the path to name)."""
    if _device(ctx) == "trainium":
        strategy = _section(recipe.data, "distributed_strategy")
        tp = _int(strategy.get("tensor_model_parallel_size")) or 1
        pp = _int(strategy.get("pipeline_model_parallel_size")) or 1
        path = "tensor_model_parallel_size" if tp > 1 or pp == 1 else "pipeline_model_parallel_size"
        return tp * pp, f"tensor {tp} x pipeline {pp}", f"recipe.distributed_strategy.{path}"
    model = _section(recipe.data, "model")
    sd = _int(model.get("shard_degree")) or 1
    tp = _int(model.get("tensor_model_parallel_degree")) or 1
    ep = _int(model.get("expert_model_parallel_degree")) or 1
    path = "shard_degree" if model.get("shard_degree") else "tensor_model_parallel_degree"
    return sd * tp * ep, f"shard {sd} x tensor {tp} x expert {ep}", f"recipe.model.{path}"


def recipe_degrees(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """The degree product divides the world (recipe num_nodes x processes per instance)."""
    if recipe.kind != "standard":
        return
    per_instance = _devices_per_instance(ctx)
    product = _degree_product(recipe, ctx)
    if per_instance is None or product is None:
        return
    nodes = _int(_section(recipe.data, "trainer").get("num_nodes")) or 1
    world = nodes * per_instance
    degree, shown, path = product
    if world % degree == 0:
        return
    unit = "NeuronCores" if _device(ctx) == "trainium" else "GPUs"
    found = divisors(world)  # bounded: a recipe's num_nodes may be 10^12
    yield Problem(
        path,
        f"{shown} = {degree} must divide the world size, {nodes} node(s) x {per_instance} "
        f"{unit} = {world}; the training fails at start.",
        f"choose degrees whose product is one of {', '.join(map(str, found[-6:]))} (or "
        "another divisor), or run more nodes.",
    )


def recipe_context_parallel(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """The adapter: the context parallel degree must not exceed the shard degree."""
    if recipe.kind != "standard" or _device(ctx) != "gpu":
        return
    model = _section(recipe.data, "model")
    cp = _int(model.get("context_parallel_degree")) or 1
    sd = _int(model.get("shard_degree")) or 1
    if cp > 1 and cp > sd:
        yield Problem(
            "recipe.model.context_parallel_degree",
            f"is {cp}, more than shard_degree ({sd}); the adapter refuses it (\"context "
            "parallel degree shouldn't be greater than shard degree\").",
            "",
            fixes=(
                _override("model.shard_degree", cp),
                _override("model.context_parallel_degree", sd),
            ),
        )


def recipe_without_smp(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """Without the SMP model implementation, tensor and expert parallelism stay at 1."""
    if recipe.kind != "standard" or _device(ctx) != "gpu" or _uses_smp(recipe):
        return
    model = _section(recipe.data, "model")
    for key in ("tensor_model_parallel_degree", "expert_model_parallel_degree"):
        value = _int(model.get(key)) or 1
        if value > 1:
            yield Problem(
                f"recipe.model.{key}",
                f"is {value} with use_smp_model false; the adapter refuses it (\"Non SMP Model "
                "implementations do not support tensor_model_parallel_degree or "
                "expert_model_parallel_degree > 1\").",
                "",
                fixes=(_override("model.use_smp_model", True), _override(f"model.{key}", 1)),
            )


def recipe_finetune(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """Fine-tuning (on unless the recipe turns it off) needs the model to start from."""
    if recipe.kind != "standard" or _device(ctx) != "gpu":
        return
    model = _section(recipe.data, "model")
    finetune = model.get("do_finetune", facts.ADAPTER_DEFAULTS["do_finetune"])
    if finetune is not False and model.get("hf_model_name_or_path") is None:
        default = "" if "do_finetune" in model else " (the adapter's default when it is absent)"
        yield Problem(
            "recipe.model.do_finetune",
            f"is true{default} and model.hf_model_name_or_path is not set; the adapter refuses "
            "it (\"Must provide 'hf_model_name_or_path' or set 'do_finetune' to False\").",
            "set model.hf_model_name_or_path (a Hugging Face name or a path in the container).",
            fixes=(_override("model.do_finetune", False),),
        )


def recipe_training_data(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """Real data needs train_dir; synthetic and multi-modal data do not."""
    if recipe.kind != "standard" or _device(ctx) != "gpu":
        return
    model = _section(recipe.data, "model")
    data = model.get("data")
    if not isinstance(data, Mapping) or not data or model.get("multi_modal"):
        return
    if not data.get("use_synthetic_data") and not data.get("train_dir"):
        yield Problem(
            "recipe.model.data.train_dir",
            "is not set and use_synthetic_data is false; the adapter refuses it (\"'train_dir' "
            "is required since model is not using Synthetic or multi-modal Data\").",
            "set recipe_overrides={'model': {'data': {'train_dir': '/opt/ml/input/data/train'}}} "
            "and pass inputs={'train': 's3://...'}, or use_synthetic_data: true.",
        )


def recipe_precision(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """fp8 (on by default with the SMP model) needs compute capability 8.9; bf16 needs 8.0."""
    if recipe.kind != "standard" or _device(ctx) != "gpu" or ctx.instance is None:
        return
    accelerator = ctx.instance.accelerator
    capability = accelerator.compute_capability if accelerator is not None else None
    if accelerator is None or not capability:
        return
    model = _section(recipe.data, "model")
    name = f"{ctx.instance_name} ({accelerator.name}, compute capability {capability})"
    fp8 = model.get("fp8", facts.ADAPTER_DEFAULTS["fp8"])
    if _uses_smp(recipe) and fp8 is not False and _below(capability, facts.FP8_COMPUTE_CAPABILITY):
        default = "" if "fp8" in model else " (the adapter's default when it is absent)"
        yield Problem(
            "recipe.model.fp8",
            f"is true{default}, but {name} has no fp8: Transformer Engine needs compute "
            f"capability {facts.FP8_COMPUTE_CAPABILITY} or higher and the training fails at its "
            "first step.",
            "",
            fixes=(
                _override("model.fp8", False),
                setting(("instance_type", "ml.p5.48xlarge"), why="H100"),
            ),
        )
    precision = str(_section(recipe.data, "trainer").get("precision", ""))
    if "bf16" in precision and _below(capability, facts.BF16_COMPUTE_CAPABILITY):
        flash = model.get("use_flash_attention") is True
        why = (
            f"; and the recipe's use_flash_attention runs FlashAttention-2, which refuses GPUs "
            f"below compute capability {facts.FLASH_ATTENTION_COMPUTE_CAPABILITY} "
            f"({facts.FLASH_ATTENTION_REFUSAL}), so the training fails at its first step"
            if flash
            else "; PyTorch emulates it or refuses it, far slower either way"
        )
        yield Problem(
            "recipe.trainer.precision",
            f"is {precision!r}, but {name} has no bfloat16 arithmetic (it needs compute "
            f"capability {facts.BF16_COMPUTE_CAPABILITY}){why}.",
            "use an A100, A10G, L4 or H100 instance type.",
            "error" if flash else "warning",
            fixes=tuple(
                setting(("instance_type", name))
                for name in ("ml.p4d.24xlarge", "ml.g5.48xlarge", "ml.p5.48xlarge")
            ),
        )


def recipe_image_cuda(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """The SDK's recipe image through the CUDA-vs-GPU rule with its CUDA build (the
    ``container_version`` of training_recipes.json's gpu_image: cu121)."""
    if recipe.kind != "standard" or _device(ctx) != "gpu":
        return
    image = facts.gpu_image()
    if image is None:
        return
    from safe_estimators._rules.platform import recipe_image_runs_on_gpu

    label, cuda_version, pytorch_version = image
    yield from recipe_image_runs_on_gpu(ctx, label, cuda_version, pytorch_version)


def _below(capability: str, minimum: str) -> bool:
    try:
        return parse_version(capability) < parse_version(minimum)  # cached: a few capabilities
    except ValueError:
        return False


def recipe_instance_types(ctx: Context, recipe: Recipe) -> Iterator[Problem]:
    """The instance types a recipe is written for: its own ``instance_types`` list (the
    fine-tuning recipes of the collection's main branch), else the type its name says
    (``..._gpu_p5x16_pretrain``: ml.p5.48xlarge). AWS tuned its degrees, batch sizes and fp8
    setting for those; on another type they are untested, so a word, not a refusal."""
    name = ctx.instance_name
    if not name or ctx.spec.instance_groups is not None:
        return
    listed = recipe.data.get("instance_types")
    if isinstance(listed, list) and listed and all(isinstance(t, str) for t in listed):
        if name not in listed:
            yield warning(
                "instance_type",
                f"is {name}, which {recipe.name} does not list among its instance types "
                f"({', '.join(listed)}); AWS set its parallelism and batch sizes for those.",
                f"check the recipe's degrees and batch sizes for {name}.",
                fixes=tuple(setting(("instance_type", kind)) for kind in listed[:3]),
            )
        return
    written = facts.named_instance_type(recipe.name, name)
    if written is not None:
        yield warning(
            "instance_type",
            f"is {name}, but {recipe.name} is written for {written} (its name says so): its "
            "degrees, batch sizes and fp8 setting were set for that type.",
            f"check the recipe's degrees, batch sizes and fp8 for {name}.",
            fixes=(setting(("instance_type", written)),),
        )


RECIPE_RULES: tuple[RecipeRule, ...] = (
    recipe_machines,
    recipe_sources,
    recipe_image,
    recipe_structure,
    recipe_devices,
    recipe_nodes,
    recipe_finetuning_trainer,
    recipe_degrees,
    recipe_context_parallel,
    recipe_without_smp,
    recipe_finetune,
    recipe_training_data,
    recipe_precision,
    recipe_instance_types,
    recipe_image_cuda,
)


@problem_source("recipe-ignored-arguments")
def dropped_arguments(spec: JobSpec) -> list[Problem]:
    """Arguments the SDK ignores beside a recipe, each with the recipe key to set instead."""
    found = []
    if spec.entry_point:
        found.append(
            warning(
                "entry_point",
                f"is ignored with training_recipe: the SDK runs the recipe's own script, not "
                f"{spec.entry_point!r}.",
                "to change the training, override the recipe's keys.",
                fixes=(removing("entry_point"),),
            )
        )
    if spec.hyperparameters:
        names = ", ".join(sorted(map(str, spec.hyperparameters))[:5])
        found.append(
            warning(
                "hyperparameters",
                f"are dropped with training_recipe ({names}): the SDK passes only the recipe's "
                "location, and the script reads the recipe.",
                "set the values in recipe_overrides under the recipe's keys, e.g. "
                "{'model': {'optim': {'lr': 0.0001}}, 'trainer': {'max_steps': 100}}.",
            )
        )
    for name, keys in (
        ("distribution", "model.shard_degree, model.tensor_model_parallel_degree"),
        ("model_parallel", "model.shard_degree, model.tensor_model_parallel_degree"),
    ):
        if getattr(spec, name):
            found.append(
                warning(
                    name,
                    "is dropped with training_recipe: the SDK sets the distribution from the "
                    "instance type (torchrun, with SMP on GPUs).",
                    f"set the parallelism in recipe_overrides ({keys}; on Trainium "
                    "distributed_strategy.tensor_model_parallel_size).",
                )
            )
    if spec.source_dir is not None and (spec.target or default_target()) == MODEL_TRAINER:
        found.append(
            warning(
                "source_dir",
                "is not used by ModelTrainer.from_recipe: it uploads the folder of the recipe's "
                "own script, which it clones (source_dir is the estimator's).",
                "remove source_dir (a requirements file is from_recipe's requirements=).",
            )
        )
    if spec.training_compiler is not None:
        found.append(
            Problem(
                "training_compiler",
                "does not apply to a recipe job: the recipe's image and script run it.",
                "",
                fixes=(removing("training_compiler"),),
            )
        )
    return found


def check_recipe(ctx: Context, recipe: Recipe) -> list[Problem]:
    """Every recipe rule's problems, in the table's order; the memory estimate's warnings
    once the rest holds. A rule that read a value only the build resolves says nothing (the
    value's own warning says it was not checked): its verdict would be about a stand-in."""
    from safe_estimators._recipes.memory import recipe_memory

    found = [
        found_by(problem, rule)
        for rule in RECIPE_RULES
        for problem in _known(rule, ctx, recipe)
    ]
    if any(p.severity == "error" for p in found):
        return found
    return found + tagged(recipe_memory, _known(recipe_memory, ctx, recipe))


def _known(rule: RecipeRule, ctx: Context, recipe: Recipe) -> list[Problem]:
    """``rule``'s problems, or none when it (or the recipe's kind) read an unresolved value."""
    if not recipe.unresolved:
        return list(rule(ctx, recipe))
    read: list[tuple[str, ...]] = []
    tracked = _Tracked(recipe.data, (), recipe.unresolved, read)
    if recipe_kind(tracked) != recipe.kind or read:
        return []  # the kind itself depends on the build: no rule's verdict holds
    problems = list(rule(ctx, attrs.evolve(recipe, data=tracked)))
    return [] if read else problems


class _Tracked(Mapping[str, Any]):
    """A recipe's data that records every read of a value only the build resolves (or of a
    list or text holding one)."""

    __slots__ = ("_data", "_path", "_read", "_unresolved")

    def __init__(
        self,
        data: Mapping[str, Any],
        path: tuple[str, ...],
        unresolved: frozenset[tuple[str, ...]],
        read: list[tuple[str, ...]],
    ) -> None:
        self._data, self._path, self._unresolved, self._read = data, path, unresolved, read

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        path = (*self._path, str(key))
        if isinstance(value, Mapping):
            return _Tracked(value, path, self._unresolved, self._read)
        if any(found[: len(path)] == path for found in self._unresolved):
            self._read.append(path)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def recipe_instance_count(recipe: Recipe) -> tuple[object, str]:
    """The instance count the SDK takes from the recipe when none is given, and from where."""
    if recipe.kind in ("nova", "eval"):
        return _section(recipe.data, "run").get("replicas"), "run.replicas"
    return _section(recipe.data, "trainer").get("num_nodes"), "trainer.num_nodes"


def recipe_injections(
    ctx: Context, recipe: Recipe, kwargs: dict[str, Any], *, count_from_recipe: bool = False
) -> list[Injection]:
    """What the SDK derives from the recipe, with its reason; the dropped arguments removed.

    ``count_from_recipe``: the job gave no instance_count, so the recipe's is sent (the bare
    SDK takes the same number from the recipe): recorded. A count the user gave is sent as
    written, whatever the recipe says, and is no injection."""
    spec = ctx.spec
    for name in ("entry_point", "hyperparameters", "distribution"):
        kwargs.pop(name, None)
    record: list[Injection] = []
    count_value, key = recipe_instance_count(recipe)
    if count_from_recipe and count_value == spec.instance_count:
        record.append(
            Injection(
                "instance_count",
                count_value,
                f"the recipe's {key}; the SDK takes the instance count from it when "
                "instance_count is not given.",
            )
        )
    if recipe.kind in ("nova", "eval"):
        run = _section(recipe.data, "run")
        where = str(run.get("model_name_or_path") or "")
        sent = {"model_type": run.get("model_type")}
        if where:
            sent["base_model_location" if where.startswith("s3://") else "base_model"] = where
        record.append(
            Injection(
                "hyperparameters",
                sent,
                "the SDK sends the Nova model from the recipe's run section; it also turns off "
                "remote debugging, the profiler and the Debugger hook for Nova jobs.",
            )
        )
    if recipe.kind != "standard":
        record.append(
            Injection(
                "inputs.recipe",
                "the resolved recipe, uploaded to S3 at fit",
                "Nova and LLM fine-tuning jobs read their recipe from a 'recipe' input "
                "channel, which the SDK adds.",
            )
        )
        return record
    device = _device(ctx)
    if ctx.target == MODEL_TRAINER:
        if spec.image_uri is None and spec.trainer is None:
            placeholder = facts.from_recipe_placeholder_image()
            config = "gpu_image" if device == "gpu" else "neuron_image"
            kind = "GPU" if device == "gpu" else "Trainium"
            instead = f" (from_recipe would send {placeholder!r})" if placeholder else ""
            record.append(
                Injection(
                    "training_image",
                    facts.image_description(device),
                    f"the estimator's recipe image for {kind} instances (training_recipes.json, "
                    f"{config}): the spec is in the estimator's words, and the same spec is the "
                    f"same job on both targets{instead}.",
                )
            )
        return record + _from_recipe_injections(recipe, device)
    if spec.image_uri is None:
        config = "gpu_image" if device == "gpu" else "neuron_image"
        record.append(
            Injection(
                "image_uri",
                facts.image_description(device),
                f"the SDK's recipe image for {device.upper() if device == 'gpu' else 'Trainium'} "
                f"instances (training_recipes.json, {config}); an image_uri you give wins.",
            )
        )
    if device == "gpu":
        script = facts.gpu_script(str(_section(recipe.data, "model").get("model_type", "")))
        if script is not None:
            record.append(
                Injection(
                    "entry_point",
                    script[1],
                    f"the training adapter's examples/{script[0]}/{script[1]} for model_type "
                    f"{_section(recipe.data, 'model').get('model_type')!r}, which the SDK "
                    "clones and copies into source_dir.",
                )
            )
    elif device == "trainium":
        record.append(
            Injection(
                "entry_point",
                facts.TRAINIUM_SCRIPT,
                "neuronx-distributed-training's examples, which the SDK clones and copies "
                "into source_dir.",
            )
        )
    if device in facts.DISTRIBUTIONS:
        record.append(
            Injection(
                "distribution",
                facts.DISTRIBUTIONS[device],
                "the SDK's distribution for recipe jobs on "
                + ("GPUs (torchrun with SMP v2)" if device == "gpu" else "Trainium (torchrun)")
                + "; the adapter sets the SMP degrees from the recipe itself.",
            )
        )
    record.append(
        Injection(
            "hyperparameters",
            {"config-path": ".", "config-name": f"{recipe.name}_<random>.yaml"},
            "the resolved recipe, which the SDK saves into source_dir and points the script at.",
        )
    )
    return record



def _from_recipe_injections(recipe: Recipe, device: str) -> list[Injection]:
    """What sagemaker 3's ModelTrainer.from_recipe derives from a standard recipe."""
    record = [
        Injection(
            f"recipe_overrides.{path}",
            "merged here",
            f"sagemaker {sdk_version()}'s ModelTrainer.from_recipe reads the recipe's own value "
            "of each key it overrides and fails on this one (an interpolation of a key outside "
            "the recipe); it is handed the checked recipe with the overrides merged instead.",
        )
        for path in recipe.unreadable_overrides
    ]
    if device == "gpu":
        model_type = str(_section(recipe.data, "model").get("model_type", ""))
        script = facts.from_recipe_script(model_type)
        if script is not None:
            record.append(
                Injection(
                    "source_code",
                    {"source_dir": f"<clone>/examples/{script[0]}", "entry_script": script[1]},
                    f"the training adapter's examples/{script[0]}/{script[1]} for model_type "
                    f"{model_type!r}: ModelTrainer.from_recipe clones the adapter when it is "
                    "built and uploads that folder.",
                )
            )
    elif device == "trainium":
        record.append(
            Injection(
                "source_code",
                {"source_dir": "<clone>/examples", "entry_script": facts.TRAINIUM_SCRIPT},
                "neuronx-distributed-training's examples: ModelTrainer.from_recipe clones the "
                "repository when it is built and uploads that folder.",
            )
        )
    if device in facts.FROM_RECIPE_DISTRIBUTED:
        record.append(
            Injection(
                "distributed",
                facts.FROM_RECIPE_DISTRIBUTED[device],
                "ModelTrainer.from_recipe's launcher for recipe jobs on "
                + ("GPUs" if device == "gpu" else "Trainium")
                + "; torchrun starts one process per "
                + ("GPU" if device == "gpu" else "NeuronCore")
                + " (SM_NUM_GPUS, then SM_NUM_NEURONS).",
            )
        )
    record.append(
        Injection(
            "hyperparameters",
            {"config-path": ".", "config-name": facts.FROM_RECIPE_FILE},
            "the resolved recipe, which ModelTrainer.from_recipe saves beside the script and "
            "points it at (hyperparameters you give are ignored).",
        )
    )
    return record
