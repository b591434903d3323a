"""Which libraries the absence rules know, and what of a program the checks cannot see.

A rule that reports something missing ("never initialises the process group") is only as sure
as its view of the program: a library it has not read may do the missing thing itself. Each such
rule names the libraries it knows here, one table per rule, each entry with the source that shows
what the library does; ``_Program.unseen`` compares a program's imports with a table (see the
severity policy in the package docstring).

Facts are data: a library that is verified to set up the process group itself is one entry in
``PROCESS_GROUP_INITIALISERS``, one that is verified to play no part in it one entry in
``NEUTRAL``.

A library may act through some of its names and not others: transformers' ``TrainingArguments``
calls ``smp.init()`` under SMP v1, its ``AutoConfig`` never does. ``INERT_NAMES`` lists, per
library, the names (a module or a class, with everything below it) known not to do what any
absence rule looks for: a program that uses only such names of a library sees all of that
library the rule needs (``_Program.unseen``); another name of it keeps the warning.

The names that save a model (``MODEL_SAVING_FUNCTIONS``, ``MODEL_SAVING_METHODS``) are one
table per kind with the signature each is read by: the model-outside-model-dir rule follows
the destination of those calls only.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

# The standard library never starts processes for a launcher, joins a process group or sets up a
# model parallel library.
STANDARD_LIBRARY = frozenset(sys.stdlib_module_names) | {"__future__"}

# Libraries that neither set up a process group, nor the SageMaker model parallel libraries, nor
# register a torch.distributed backend: what they do is known to every absence rule.
NEUTRAL: Mapping[str, str] = {
    "numpy": "no torch dependency",
    "pandas": "no torch dependency",
    "scipy": "no torch dependency",
    "sklearn": "no torch dependency",
    "PIL": "no torch dependency",
    "yaml": "no torch dependency",
    "matplotlib": "no torch dependency",
    "boto3": "no torch dependency (the AWS SDK)",
    "botocore": "no torch dependency (the AWS SDK)",
    "tqdm": "no torch dependency (progress bars)",
    "sentencepiece": "no torch dependency (a tokenizer)",
    "tokenizers": "no torch dependency (Rust tokenizers)",
    "datasets": "huggingface/datasets src/: no init_process_group; split_dataset_by_node "
    "(src/datasets/distributed.py) takes rank and world_size as arguments",
    "evaluate": "huggingface/evaluate src/: no init_process_group",
    "peft": "huggingface/peft src/: no init_process_group, no init_device_mesh",
}  # fmt: skip

# Calls that set up the torch.distributed process group for the script: (package prefix, call
# tail) -> where the library does it.
PROCESS_GROUP_INITIALISERS: Mapping[tuple[str, str], str] = {
    ("torch.distributed", "init_device_mesh"): "torch/distributed/device_mesh.py: DeviceMesh "
    "creates the default group (_get_or_create_default_group calls init_process_group)",
    ("deepspeed", "init_distributed"): "deepspeed/comm/comm.py init_distributed -> "
    "deepspeed/comm/torch.py TorchBackend.init_process_group",
    ("deepspeed", "initialize"): "deepspeed/__init__.py initialize() calls "
    "dist.init_distributed(...)",
    ("horovod", "init"): "Horovod communicates through its own MPI/Gloo layer, started by "
    "hvd.init()",
    ("smdistributed.modelparallel", "init"): "smp.init() sets up the library's process groups "
    "(AWS SMP v1 guide)",
    ("torch.sagemaker", "init"): "tsm.init() sets up SMP v2's process groups (AWS SMP v2 guide)",
    ("accelerate", "Accelerator"): "src/accelerate/accelerator.py Accelerator.__init__ builds "
    "AcceleratorState, whose PartialState calls torch.distributed.init_process_group "
    "(src/accelerate/state.py)",
    ("lightning", "Fabric"): "Lightning Fabric's strategy sets up the process group on launch",
    ("colossalai", "launch_from_torch"): "colossalai.launch_from_torch -> launch(), which calls "
    "init_process_group",
    ("megatron", "pretrain"): "NVIDIA/Megatron-LM megatron/training/training.py: pretrain() "
    "calls initialize_megatron()",
    ("megatron", "initialize_megatron"): "NVIDIA/Megatron-LM megatron/training/initialize.py: "
    "initialize_megatron -> _initialize_distributed -> torch.distributed.init_process_group",
    ("composer", "Trainer"): "mosaicml/composer composer/trainer/trainer.py: Trainer.__init__ "
    "calls dist.initialize_dist (composer/utils/dist.py: torch.distributed.init_process_group)",
    ("ray.train", "TorchTrainer"): "ray-project/ray python/ray/train/torch/config.py: "
    "_TorchBackend.on_start runs _setup_torch_process_group (dist.init_process_group) in "
    "every worker",
    ("nemo", "pretrain"): "NVIDIA/NeMo nemo/collections/llm/api.py: pretrain -> train -> "
    "trainer.fit; MegatronStrategy.setup_distributed calls torch.distributed.init_process_group "
    "(nemo/lightning/pytorch/strategies/megatron_strategy.py)",
    ("nemo", "finetune"): "NVIDIA/NeMo nemo/collections/llm/api.py: finetune -> trainer.fit "
    "(MegatronStrategy.setup_distributed)",
    ("nemo", "train"): "NVIDIA/NeMo nemo/collections/llm/api.py: train -> trainer.fit "
    "(MegatronStrategy.setup_distributed)",
    ("nemo", "create_trainer"): "NVIDIA/NeMo nemo/collections/nlp/parts/"
    "megatron_trainer_builder.py: MegatronTrainerBuilder.create_trainer returns a Lightning "
    "Trainer with NLPDDPStrategy (nlp_overrides.py), whose setup_distributed joins the group",
}  # fmt: skip
# Calls after which a framework feeds the training step from loaders it builds, sharded by
# data-parallel rank: any other DataLoader of the program is a side path (evaluation, mock
# data, per-rank rollouts), not the training data.
DATA_SHARDERS: Mapping[tuple[str, str], str] = {
    ("megatron", "pretrain"): "NVIDIA/Megatron-LM megatron/training/training.py: pretrain -> "
    "build_train_valid_test_data_loaders -> build_pretraining_data_loader "
    "(megatron/training/datasets/data_samplers.py), whose batch samplers take "
    "mpu.get_data_parallel_rank() and get_data_parallel_world_size()",
}  # fmt: skip

# Hugging Face Transformers' from_pretrained(tp_plan=...) initialises torch.distributed itself
# (src/transformers/integrations/tensor_parallel.py, initialize_tensor_parallelism).
TP_PLAN_KEYWORD = "tp_plan"

# What the no-process-group rule knows: the neutral libraries, torch itself (its initialisers
# are the calls above), the frameworks whose initialisers or trainers it recognises.
KNOWN_TO_PROCESS_GROUP_RULE: Mapping[str, str] = {
    **NEUTRAL,
    "torch": "init_process_group / init_device_mesh are the calls that set it up",
    "transformers": "its Trainer and from_pretrained(tp_plan=...) set it up; both recognised",
    "trl": "its trainers are Transformers Trainers (recognised)",
    "accelerate": "Accelerator() recognised",
    "deepspeed": "deepspeed.initialize / init_distributed recognised",
    "lightning": "Trainer and Fabric recognised",
    "pytorch_lightning": "Trainer recognised",
    "composer": "Trainer recognised",
    "smdistributed": "smp.init() recognised; SMDDP's init_process_group is init_process_group",
    "torch_xla": "its xla backend is joined through init_process_group",
    "mpi4py": "the script communicates through MPI itself",
    "horovod": "hvd.init() recognised",
}  # fmt: skip

# What the SMP rules (smp.init, @smp.step, DistributedModel, tsm.init, tsm.transform missing)
# know: a library outside this table may call the library for the script.
KNOWN_TO_SMP_RULES: Mapping[str, str] = {
    **NEUTRAL,
    "torch": "no SageMaker model parallel calls of its own",
    "smdistributed": "the library itself: its calls are what the rules look for",
}  # fmt: skip

# What the smddp-backend rule knows: a library outside this table may import torch_smddp (and
# so register the backend) for the script.
KNOWN_TO_SMDDP_RULE: Mapping[str, str] = {
    **NEUTRAL,
    "torch": "registers no smddp backend",
    "smdistributed": "the import the rule looks for",
}  # fmt: skip

# What the heterogeneous-cluster rule (the script never reads its instance group) knows: these
# libraries read no SageMaker instance-group variable for the script (the names are SageMaker's
# own, read from resourceconfig.json by the training toolkit, sagemaker_training.environment).
_NO_GROUP = "reads no SageMaker instance-group variable (SM_CURRENT_INSTANCE_GROUP, resourceconfig)"
KNOWN_TO_GROUP_RULE: Mapping[str, str] = {
    **NEUTRAL,
    "torch": "torch.distributed reads MASTER_ADDR/RANK, not SageMaker's groups; " + _NO_GROUP,
    "torchvision": _NO_GROUP,
    "smdistributed": "runs inside the script's own process when called: it cannot keep the "
    "script's other code from running on a group without the distribution (the toolkit "
    "starts the script there as one plain process, without LOCAL_RANK)",
}  # fmt: skip

# The names of a library known to do none of what the absence rules look for: initialise a
# process group, call SMP v1's smp.init() or v2's torch.sagemaker.init()/transform(), import
# torch_smddp (register the smddp backend), read SageMaker's instance group. (Not whether they
# shard a model: the memory estimate keeps its own tables.) library -> {name below it: source};
# a name covers everything below it ("datasets" covers torchvision.datasets.FakeData).
_TORCHVISION = (
    "pytorch/vision torchvision/: no init_process_group, no init_device_mesh, no smdistributed "
    "or torch.sagemaker import anywhere in the package (distributed helpers live in its "
    "references/ scripts, which are not installed)"
)
_TRANSFORMERS_MODELS = (
    "huggingface/transformers src/transformers/: the one smp.init() is at the top of "
    "training_args.py, under is_sagemaker_mp_enabled(); nothing imports torch.sagemaker or "
    "torch_smddp outside TrainingArguments and the Trainer; the configuration, model, "
    "tokenizer and collator modules import neither"
)
INERT_NAMES: Mapping[str, Mapping[str, str]] = {
    "torchvision": {
        name: _TORCHVISION
        for name in ("datasets", "transforms", "models", "io", "ops", "utils", "set_image_backend")
    },
    "transformers": {
        name: _TRANSFORMERS_MODELS
        for name in (
            "AutoConfig", "AutoTokenizer", "AutoProcessor", "AutoImageProcessor",
            "AutoFeatureExtractor", "AutoModel", "AutoModelForCausalLM", "AutoModelForMaskedLM",
            "AutoModelForSeq2SeqLM", "AutoModelForSequenceClassification",
            "AutoModelForTokenClassification", "AutoModelForQuestionAnswering",
            "AutoModelForImageClassification", "PretrainedConfig", "PreTrainedModel",
            "PreTrainedTokenizer", "PreTrainedTokenizerFast", "GenerationConfig",
            "BitsAndBytesConfig", "LlamaConfig", "LlamaForCausalLM", "LlamaTokenizer",
            "LlamaTokenizerFast", "GPT2Config", "GPT2LMHeadModel", "GPT2Tokenizer",
            "GPTNeoXConfig", "GPTNeoXForCausalLM", "MistralConfig", "MistralForCausalLM",
            "MixtralConfig", "MixtralForCausalLM", "BertConfig", "BertModel", "BertTokenizer",
            "BertForSequenceClassification", "T5Config", "T5ForConditionalGeneration",
            "default_data_collator", "DataCollatorForLanguageModeling",
            "DataCollatorForSeq2Seq", "DataCollatorWithPadding", "DefaultDataCollator",
            "set_seed", "get_scheduler", "get_linear_schedule_with_warmup",
            "get_cosine_schedule_with_warmup", "SchedulerType", "logging",
            "models", "modeling_utils", "configuration_utils", "tokenization_utils_base",
            "data", "utils",
        )
    },
}  # fmt: skip

# Names of a library known to do it, per absence rule family: the library acts for the script,
# so the rule has nothing to report. (library, name) -> source.
SMP_V1_INITIALISERS: Mapping[tuple[str, str], str] = {
    ("transformers", "TrainingArguments"): "src/transformers/training_args.py: "
    "`if is_sagemaker_mp_enabled(): import smdistributed.modelparallel.torch as smp; "
    "smp.init()` at import",
    ("transformers", "Seq2SeqTrainingArguments"): "a TrainingArguments subclass "
    "(training_args_seq2seq.py imports training_args)",
    ("transformers", "Trainer"): "src/transformers/trainer.py imports TrainingArguments "
    "(smp.init() at import) and wraps the model in smp.DistributedModel",
}  # fmt: skip


# Calls that write the model (its weights, a checkpoint of it) to a destination: what the
# model-outside-model-dir rule follows. A function counts by its dotted name, resolved through
# the imports; ``(position, keyword)`` is where its destination is passed, and ``saved`` the
# position of the object written when it need not be the model (torch.save writes any object:
# the rule then asks that it read as a model): name -> (position, keyword, keyword of the
# object written first when it may be something else than the model, source).
MODEL_SAVING_FUNCTIONS: Mapping[str, tuple[int, str, str | None, str]] = {
    "torch.save": (1, "f", "obj", "pytorch/pytorch torch/serialization.py: save(obj, f, "
                   "pickle_module=..., pickle_protocol=..., _use_new_zipfile_serialization=True)"),
    "torch_xla.core.xla_model.save": (1, "file_or_path", "data", "pytorch/xla "
                                      "torch_xla/core/xla_model.py: save(data, file_or_path, "
                                      "master_only=True, global_master=False)"),
    "joblib.dump": (1, "filename", "value", "joblib/numpy_pickle.py: dump(value, filename, "
                    "compress=0, protocol=None)"),
    "safetensors.torch.save_file": (1, "filename", "tensors", "huggingface/safetensors "
                                    "bindings/python/py_src/safetensors/torch.py: "
                                    "save_file(tensors, filename, metadata=None)"),
    "safetensors.torch.save_model": (1, "filename", None, "huggingface/safetensors "
                                     "bindings/python/py_src/safetensors/torch.py: "
                                     "save_model(model, filename, metadata=None, "
                                     "force_contiguous=False)"),
    "smdistributed.modelparallel.torch.save": (1, "f", "obj", "AWS SMP v1 API, smp.save(obj, f, "
                                               "partial=True, pickle_module=..., ...)"),
    "smdistributed.modelparallel.torch.save_checkpoint": (0, "path", None, "AWS SMP v1 API, "
                                                          "smp.save_checkpoint(path, tag, "
                                                          "partial=True, model=None, ...)"),
}  # fmt: skip

# Methods that write the model, on an object of a library the program imports (a model, a
# trainer, an engine): (library, method) -> (position, keyword, receiver word, source). The
# receiver word, when given, must be in the receiver's name (``accelerator.save``: ``save`` is
# too common a method name to count on any object); a method of a library the program does not
# import is not counted, so a save is judged by the libraries the script uses.
MODEL_SAVING_METHODS: Mapping[tuple[str, str], tuple[int, str, str, str]] = {
    ("transformers", "save_pretrained"): (0, "save_directory", "", "huggingface/transformers "
                                          "src/transformers/modeling_utils.py: "
                                          "PreTrainedModel.save_pretrained(save_directory, "
                                          "is_main_process=True, state_dict=None, ...)"),
    ("peft", "save_pretrained"): (0, "save_directory", "", "huggingface/peft "
                                  "src/peft/peft_model.py: PeftModel.save_pretrained("
                                  "save_directory, safe_serialization=True, ...)"),
    ("transformers", "save_model"): (0, "output_dir", "", "huggingface/transformers "
                                     "src/transformers/trainer.py: Trainer.save_model("
                                     "output_dir=None, _internal_call=False); None saves to "
                                     "args.output_dir"),
    ("trl", "save_model"): (0, "output_dir", "", "huggingface/trl: its trainers (SFTTrainer, "
                            "DPOTrainer, ...) subclass transformers.Trainer"),
    ("accelerate", "save_model"): (1, "save_directory", "accelerator", "huggingface/accelerate "
                                   "src/accelerate/accelerator.py: Accelerator.save_model(model, "
                                   "save_directory, max_shard_size='10GB', "
                                   "safe_serialization=True)"),
    ("accelerate", "save"): (1, "f", "accelerator", "huggingface/accelerate "
                             "src/accelerate/accelerator.py: Accelerator.save(obj, f, "
                             "safe_serialization=False)"),
    ("deepspeed", "save_checkpoint"): (0, "save_dir", "", "microsoft/DeepSpeed "
                                       "deepspeed/runtime/engine.py: DeepSpeedEngine."
                                       "save_checkpoint(save_dir, tag=None, client_state={}, "
                                       "save_latest=True, ...)"),
    ("lightning", "save_checkpoint"): (0, "filepath", "", "Lightning-AI/pytorch-lightning "
                                       "src/lightning/pytorch/trainer/trainer.py: Trainer."
                                       "save_checkpoint(filepath, weights_only=False, "
                                       "storage_options=None)"),
    ("pytorch_lightning", "save_checkpoint"): (0, "filepath", "", "the same Trainer under its "
                                               "older package name"),
}  # fmt: skip
