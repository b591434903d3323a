"""Training-script checks: the troubleshooting guides' pitfalls, found in the script before launch.

Fixture scripts come in pairs, ``<rule>_bad.py`` and ``<rule>_good.py``. A bad script marks each
line where a finding is expected with ``# expect: <rule>[, <rule>]``, and a whole-file finding
(line 0) with ``# expect-file: <rule>``; the tests compare the findings to these markers exactly.
A good script must produce no finding at all in the same job configuration.
"""

from __future__ import annotations

import gc
import re
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safe_estimators._script_checks import Finding, ScriptContext, check_script, check_source

FIXTURES = Path(__file__).parent / "fixtures" / "scripts"

# 2 x ml.p3.8xlarge with Training Compiler and pytorchxla: xla_spawn starts 4 processes each.
XLA = ScriptContext(training_compiler=True, xla_distributed=True, gpus_per_instance=4)
# 1 x ml.p3.8xlarge with Training Compiler, single process.
COMPILER = ScriptContext(training_compiler=True, gpus_per_instance=4)
PLAIN = ScriptContext()
SMP = ScriptContext(model_parallel=True)
SMP_FP16 = ScriptContext(model_parallel=True, model_parallel_fp16=True)
EVERYTHING = ScriptContext(
    training_compiler=True,
    xla_distributed=True,
    gpus_per_instance=8,
    model_parallel=True,
    model_parallel_fp16=True,
)

# torchrun on 2 x ml.p4d.24xlarge (8 GPUs each): 16 processes.
TORCHRUN = ScriptContext(
    gpus_per_instance=8, launcher="torchrun", processes=16, instance_type="ml.p4d.24xlarge",
    pytorch_version="2.3.0",
)
SMDDP = attrs.evolve(TORCHRUN, launcher="smddp")
TRAINIUM = attrs.evolve(
    TORCHRUN, gpus_per_instance=None, processes=32, instance_type="ml.trn1.32xlarge",
    pytorch_version="2.0.0",
)
SMP_V1 = ScriptContext(
    model_parallel=True, launcher="smp-v1", gpus_per_instance=8, processes=16,
    instance_type="ml.p4d.24xlarge", pytorch_version="1.13.1",
)
# SMP v2 on 2 x ml.p4d.24xlarge, PyTorch 2.3.1 (SMP 2.5.0): tensor 8 x hybrid shard 2.
SMP_V2 = attrs.evolve(
    TORCHRUN, launcher="smp-v2", pytorch_version="2.3.1", tensor_parallel_degree=8,
    hybrid_shard_degree=2,
)
SMP_V2_TP_ONLY = attrs.evolve(SMP_V2, hybrid_shard_degree=1)
SMP_V2_OFFLOAD = attrs.evolve(SMP_V2, activation_offloading_set=True)
SMP_V2_PT241 = attrs.evolve(SMP_V2, pytorch_version="2.4.1")  # SMP 2.7.0
SPOT = ScriptContext(use_spot_instances=True)

# rule id -> the job configuration its pair of fixtures is checked in.
PAIRS = {
    "xla-missing-mp-fn": XLA,
    "xla-mp-fn-signature": XLA,
    "xla-missing-mark-step": XLA,
    "xla-gradients-not-reduced": XLA,
    "xla-data-not-sharded": XLA,
    "xla-no-device-loader": XLA,
    "gpu-num-devices-not-str": COMPILER,
    "gpu-num-devices-mismatch": COMPILER,
    "environ-not-str": PLAIN,
    "dynamic-padding": COMPILER,
    "amp-clip-before-unscale": PLAIN,
    "amp-step-before-clip": PLAIN,
    "amp-reduce-after-clip": XLA,
    "smp-fp16-model-creation": SMP_FP16,
    "smp-fp16-lr-scheduler-wrapper": SMP_FP16,
    "smp-fp16-clip-grad-norm": SMP_FP16,
    "smp-fp16-static-loss-scale": SMP_FP16,
    "smp-set-device": SMP,
    "smp-not-imported": SMP,
    "smp-no-init": SMP_V1,
    "smp-no-step": SMP_V1,
    "smp-no-distributed-model": SMP_V1,
    "smp-no-distributed-optimizer": SMP_V1,
    "no-process-group": TORCHRUN,
    "no-distributed-sampler": TORCHRUN,
    "hard-coded-device": TORCHRUN,
    "save-on-every-rank": TORCHRUN,
    "smddp-backend-not-imported": TORCHRUN,
    "smddp-job-uses-nccl": SMDDP,
    "trainium-backend": TRAINIUM,
    "smp-v2-no-init": SMP_V2,
    "smp-v2-no-transform": SMP_V2,
    "smp-v2-smddp-after-init": SMP_V2,
    "smp-v2-smddp-tensor-parallel-only": SMP_V2_TP_ONLY,
    "smp-v2-offloading-not-wired": SMP_V2_OFFLOAD,
    "smp-v2-removed-module": SMP_V2_PT241,
    "model-outside-model-dir": PLAIN,
    "spot-without-checkpoints": SPOT,
}

EXAMPLES = Path(__file__).parents[1] / "examples"

# Realistic scripts: name -> (the corrected script, which is the shipped example's, and the job
# configuration); fixtures/scripts/<name>_bad.py, where present, is the same script with mistakes.
REALISTIC = {
    # run_mlm_no_trainer-style custom torch_xla loop with _mp_fn
    "run_mlm_xla": (EXAMPLES / "compiler-multi-gpu" / "train.py", XLA),
    # run_mlm.py: Hugging Face Trainer plus _mp_fn
    "run_mlm_trainer": (EXAMPLES / "compiler-single-gpu" / "train.py", XLA),
    # AWS's SMP v1 GPT-2 example shape, fp16
    "smp_fp16_gpt2": (EXAMPLES / "model-parallel-fp16" / "train.py", SMP_FP16),
}

TORCHRUN_SPOT = attrs.evolve(TORCHRUN, use_spot_instances=True)

# Realistic launcher scripts, both in fixtures/scripts: name -> the job configurations that
# <name>_good.py passes clean and <name>_bad.py (where present) is checked in.
REALISTIC_LAUNCH = {
    "fsdp_llama": (TORCHRUN_SPOT, TORCHRUN),
    "hf_trainer_torchrun": (TORCHRUN_SPOT, TORCHRUN, SMDDP),
    "smp_v2_guide": (SMP_V2_PT241, SMP_V2),
    "lightning": (TORCHRUN_SPOT, TORCHRUN),
}

_MARKER = re.compile(r"#\s*expect(-file)?:\s*([\w\-, ]+)")


def expected(path: Path, shown: str | None = None) -> set[tuple[str, str, int]]:
    """(file, rule, line) for each marker in the fixture."""
    found = set()
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        match = _MARKER.search(text)
        if match:
            for rule in match.group(2).split(","):
                found.add((shown or path.name, rule.strip(), 0 if match.group(1) else number))
    return found


def reported(findings: list[Finding]) -> set[tuple[str, str, int]]:
    return {(f.file, f.rule, f.line) for f in findings}


@pytest.mark.parametrize(("rule", "context"), PAIRS.items(), ids=list(PAIRS))
def test_the_mistake_is_reported_at_its_line(rule: str, context: ScriptContext) -> None:
    bad = FIXTURES / f"{rule}_bad.py"
    marks = expected(bad)
    assert rule in {r for _, r, _ in marks}, "the bad fixture must exercise its own rule"

    findings = check_script(bad.name, context, source_dir=FIXTURES)

    assert reported(findings) == marks
    assert all(f.message and f.hint for f in findings)


@pytest.mark.parametrize(("rule", "context"), PAIRS.items(), ids=list(PAIRS))
def test_the_corrected_script_passes(rule: str, context: ScriptContext) -> None:
    assert check_script(f"{rule}_good.py", context, source_dir=FIXTURES) == []


@pytest.mark.parametrize(("name", "case"), REALISTIC.items(), ids=list(REALISTIC))
def test_realistic_scripts(name: str, case: tuple[Path, ScriptContext]) -> None:
    good, context = case
    bad = FIXTURES / f"{name}_bad.py"
    assert check_script(good, context) == []
    if bad.exists():
        findings = check_script(bad.name, context, source_dir=FIXTURES)
        assert reported(findings) == expected(bad)


@pytest.mark.parametrize("name", REALISTIC_LAUNCH)
def test_realistic_launcher_scripts(name: str) -> None:
    first, *others = REALISTIC_LAUNCH[name]
    for context in (first, *others):
        assert check_script(f"{name}_good.py", context, source_dir=FIXTURES) == []
    bad = FIXTURES / f"{name}_bad.py"
    findings = check_script(bad.name, first, source_dir=FIXTURES)
    assert reported(findings) == expected(bad)
    assert all(f.message and f.hint for f in findings)


def test_every_fixture_is_in_a_table() -> None:
    names = {p.name.rsplit("_", 1)[0] for p in FIXTURES.glob("*.py")}
    assert names <= set(PAIRS) | set(REALISTIC) | set(REALISTIC_LAUNCH)
    assert set(PAIRS) <= names


def test_a_compiler_job_on_two_p3_8xlarge_without_mp_fn_is_refused() -> None:
    findings = check_script("run_mlm_xla_bad.py", XLA, source_dir=FIXTURES)

    [missing] = [f for f in findings if f.rule == "xla-missing-mp-fn"]
    assert missing.severity == "error"
    assert missing.file == "run_mlm_xla_bad.py"
    assert "each" in missing.message and "independently" in missing.message
    assert "4 per instance" in missing.message
    assert "_mp_fn(index)" in missing.hint


def test_gpu_num_devices_assigned_an_int_is_reported_with_its_line() -> None:
    source = 'import os\n\n\nos.environ["GPU_NUM_DEVICES"] = 4\n'

    [finding] = check_source(source, COMPILER, filename="train.py")

    assert (finding.rule, finding.line, finding.severity) == ("gpu-num-devices-not-str", 4, "error")
    assert "TypeError" in finding.message
    assert str(finding).startswith("train.py:4: error: `os.environ['GPU_NUM_DEVICES'] = 4`")
    assert str(finding).endswith('Fix: use the string "4".')


def test_gpu_num_devices_that_differs_from_the_instance_names_both_numbers() -> None:
    [finding] = check_source(
        'import os\nos.environ["GPU_NUM_DEVICES"] = "8"\n', COMPILER, filename="train.py"
    )
    assert finding.rule == "gpu-num-devices-mismatch"
    assert '"8"' in finding.message and "4 GPUs" in finding.message


def test_gpu_num_devices_is_not_compared_when_the_gpu_count_is_unknown() -> None:
    context = ScriptContext(training_compiler=True, gpus_per_instance=None)
    assert check_source('import os\nos.environ["GPU_NUM_DEVICES"] = "8"\n', context) == []


def test_finding_str_reads_like_a_compiler_message() -> None:
    finding = Finding("train.py", 12, "error", "x", "Something is wrong.", "do this.")
    assert str(finding) == "train.py:12: error: Something is wrong. Fix: do this."
    assert str(Finding("t.py", 0, "warning", "x", "M.", "")) == "t.py: warning: M."


def test_compiler_rules_stay_quiet_without_the_compiler() -> None:
    findings = check_script("run_mlm_xla_bad.py", PLAIN, source_dir=FIXTURES)
    # What remains is wrong in any job: the TypeError and the AMP order.
    assert {f.rule for f in findings} == {"gpu-num-devices-not-str", "amp-clip-before-unscale"}


# Local modules --------------------------------------------------------------------------------


def test_local_modules_in_source_dir_are_followed_and_named() -> None:
    root = FIXTURES / "source_dir"

    findings = check_script("train.py", COMPILER, source_dir=root)

    marks = set()
    for rel in ("helpers.py", "lib/env.py", "lib/flags.py"):
        marks |= expected(root / rel, shown=rel)
    assert reported(findings) == marks  # lib/unused.py (a syntax error) is never read
    assert len(findings) == len(marks)  # the cycle train -> helpers -> train reads each once
    assert findings == sorted(findings, key=lambda f: (f.file, f.line))


def test_without_source_dir_helpers_are_named_beside_the_entry_point() -> None:
    given = FIXTURES / "source_dir" / "train.py"

    findings = check_script(given, COMPILER)

    assert {f.file for f in findings} == {
        (given.parent / rel).as_posix() for rel in ("helpers.py", "lib/env.py", "lib/flags.py")
    }


def test_entry_point_in_a_subdirectory_of_source_dir(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.py").write_text("import common\n")
    (tmp_path / "common.py").write_text("import os\nos.environ['X'] = 1\n")

    [finding] = check_script("scripts/train.py", PLAIN, source_dir=tmp_path)

    assert (finding.file, finding.line, finding.rule) == ("common.py", 2, "environ-not-str")


def test_a_syntax_error_in_a_helper_names_the_helper(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("from utils import load\n\nload()\n")
    (tmp_path / "utils.py").write_text("def load(:\n    pass\n")

    [finding] = check_script("train.py", PLAIN, source_dir=tmp_path)

    assert (finding.file, finding.line, finding.rule) == ("utils.py", 1, "syntax-error")


def test_mp_fn_imported_from_a_helper_counts(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("from launch import _mp_fn\n")
    (tmp_path / "launch.py").write_text("def _mp_fn(index):\n    pass\n")
    assert check_script("train.py", XLA, source_dir=tmp_path) == []


# Robustness -----------------------------------------------------------------------------------


def test_a_syntax_error_is_one_finding_with_its_line(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\n\ndef main(:\n    pass\n")

    [finding] = check_script(script, XLA)

    assert (finding.rule, finding.line, finding.severity) == ("syntax-error", 3, "error")
    assert finding.file == script.as_posix()


@pytest.mark.parametrize(
    "path", ["missing.py", "a_directory.py"], ids=["missing", "directory"]
)
def test_an_unreadable_entry_point_is_one_finding(tmp_path: Path, path: str) -> None:
    (tmp_path / "a_directory.py").mkdir()

    [finding] = check_script(path, XLA, source_dir=tmp_path)

    assert (finding.rule, finding.severity, finding.file) == ("unreadable", "error", path)


def test_binary_bytes_are_one_finding(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_bytes(bytes(range(256)) * 8)

    [finding] = check_script(script, EVERYTHING)

    assert finding.rule == "syntax-error"


def test_a_shell_entry_point_is_not_parsed_unless_xla_spawn_would_import_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "train.sh").write_text("#!/bin/sh\npython train.py\n")
    assert check_script("train.sh", COMPILER, source_dir=tmp_path) == []
    [finding] = check_script("train.sh", XLA, source_dir=tmp_path)
    assert (finding.rule, finding.severity) == ("xla-entry-not-python", "error")


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("x = 1\n" * 400_000, "script-too-large"),
        ("x = " + "+".join(["1"] * 20_000), "script-too-complex"),
        ("(" * 300 + ")" * 300, "syntax-error"),
        ("a = 1\x00", "syntax-error"),
        ("a = '\ud800'", "syntax-error"),
        # Parses to an empty module: only the whole-file rules have something to say.
        ("\t  \n\x0c", "smp-not-imported xla-missing-mp-fn"),
    ],
    ids=["huge", "deep-binop", "deep-parens", "nul", "surrogate", "whitespace"],
)
def test_weird_input_never_raises(source: str, rule: str) -> None:
    findings = check_source(source, EVERYTHING)
    assert [f.rule for f in findings] == rule.split()


def test_the_garbage_collector_is_left_as_it_was() -> None:
    # The checker pauses the cyclic GC while it parses (a speed-up); it must not leak that.
    assert gc.isenabled()
    check_source("x = 1\n", EVERYTHING)
    assert gc.isenabled()
    gc.disable()
    try:
        check_source("x = 1\n", EVERYTHING)
        assert not gc.isenabled()
    finally:
        gc.enable()


# Import aliases --------------------------------------------------------------------------------

_LOOP = """
{imports}
import torch_xla.core.xla_model as xm


def _mp_fn(index):
    for batch in range(3):
        xm.optimizer_step(optimizer)
        {mark}
"""


@pytest.mark.parametrize(
    ("imports", "mark"),
    [
        ("", "xm.mark_step()"),
        ("import torch_xla", "torch_xla.core.xla_model.mark_step()"),
        ("from torch_xla.core import xla_model as xla", "xla.mark_step()"),
        ("from torch_xla.core.xla_model import mark_step", "mark_step()"),
        ("from torch_xla.core.xla_model import mark_step as sync", "sync()"),
        ("import torch_xla", "torch_xla.sync()"),
        ("", "xm.optimizer_step(optimizer, barrier=True)"),
    ],
)
def test_every_spelling_of_mark_step_counts(imports: str, mark: str) -> None:
    assert check_source(_LOOP.format(imports=imports, mark=mark), XLA) == []


def test_a_loop_without_mark_step_is_reported() -> None:
    [finding] = check_source(_LOOP.format(imports="", mark="pass"), XLA)
    assert (finding.rule, finding.line) == ("xla-missing-mark-step", 8)


@pytest.mark.parametrize(
    ("imports", "call"),
    [
        ("import torch", "torch.nn.utils.clip_grad_norm_"),
        ("from torch import nn", "nn.utils.clip_grad_norm_"),
        ("from torch.nn.utils import clip_grad_norm_", "clip_grad_norm_"),
        ("from torch.nn.utils import clip_grad_norm_ as clip", "clip"),
        ("import torch.nn.utils as U", "U.clip_grad_norm_"),
    ],
)
def test_every_spelling_of_clip_grad_norm_is_recognised(imports: str, call: str) -> None:
    source = f"""
import smdistributed.modelparallel.torch as smp
{imports}
import torch

smp.init()
torch.cuda.set_device(smp.local_rank())
with smp.model_creation(dtype=torch.float16):
    model = smp.DistributedModel(build())
{call}(model.parameters(), 1.0)
"""
    [finding] = check_source(source, SMP_FP16)
    assert (finding.rule, finding.line) == ("smp-fp16-clip-grad-norm", 10)


def test_set_device_to_a_constant_gpu_is_reported() -> None:
    source = "import smdistributed.modelparallel.torch as smp\nimport torch\n\n"
    source += "smp.init()\ntorch.cuda.set_device(0)\n"
    [finding] = check_source(source, SMP)
    assert (finding.rule, finding.line) == ("smp-set-device", 5)


def test_trainer_subclasses_are_exempt_from_the_data_rules() -> None:
    source = """
from torch.utils.data import DataLoader
from transformers import Seq2SeqTrainer


class MyTrainer(Seq2SeqTrainer):
    def get_train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=8)


def _mp_fn(index):
    pass
"""
    assert check_source(source, XLA) == []


# Property-based --------------------------------------------------------------------------------

_FIXTURE_TEXTS = sorted(p.read_text() for p in FIXTURES.rglob("*.py"))
_SNIPPETS = [
    "import torch_xla.core.xla_model as xm",
    "import smdistributed.modelparallel.torch as smp",
    "from torch.nn.utils import clip_grad_norm_ as clip",
    "import os",
    "def _mp_fn(index):",
    "def _mp_fn(*a, b):",
    "async def _mp_fn(index):",
    "_mp_fn = lambda: 0",
    "class T(transformers.Trainer):",
    "for batch in loader:",
    "while True:",
    "with smp.model_creation(dtype=dtype):",
    "dtype = dtype",
    "optimizer = smp.DistributedOptimizer(optimizer, **kw)",
    "optimizer = optimizer",
    "scheduler = torch.optim.lr_scheduler.StepLR(optimizer)",
    "scaler = GradScaler()",
    "scaler.scale(loss).backward()",
    "scaler.unscale_(optimizer)",
    "clip(model.parameters(), 1.0)",
    "scaler.step(optimizer)",
    "optimizer.step()",
    "xm.optimizer_step(optimizer, barrier=True)",
    "xm.reduce_gradients(optimizer)",
    "xm.mark_step()",
    "step()",
    "train_step()",
    "os.environ['GPU_NUM_DEVICES'] = 4",
    "os.environ.update({'GPU_NUM_DEVICES': '8'}, **extra)",
    "os.environ.update({**extra})",
    "os.environ[k] = v",
    "os.putenv('GPU_NUM_DEVICES')",
    "tokenizer(text, padding=True)",
    "DataCollatorWithPadding(*args)",
    "loader = DataLoader(ds)",
    "torch.cuda.set_device()",
    "from . import helpers",
    "from .... import *",
    "return",
    "pass",
    "x = (",
    ")",
    "'''",
    "@smp.step",
    "@rank_zero_only",
    "import torch.distributed as dist",
    "import torch.sagemaker as tsm",
    "import smdistributed.dataparallel.torch.torch_smddp",
    "from torch.sagemaker.distributed.fsdp import checkpoint",
    "dist.init_process_group(backend='smddp')",
    "dist.init_process_group('nccl', **kw)",
    "dist.init_process_group(*args)",
    "tsm.init()",
    "model = tsm.transform(model)",
    "model = offload_wrapper(model.layers[0])",
    "apply_activation_checkpointing(model)",
    "if dist.get_rank() == 0:",
    "if rank != 0: return",
    "torch.save(model.state_dict(), f'/tmp/{name}')",
    "torch.save(state, os.path.join(OUT, 'm.pt'))",
    "model.save_pretrained(path, is_main_process=main)",
    "trainer.save_model('/tmp/out')",
    "accelerator.save_model(model)",
    "save(model)",
    "def save(model):",
    "device = torch.device('cuda', 0)",
    "model.cuda(0)",
    "x.to('cuda:1', non_blocking=True)",
    "torch.cuda.set_device(0)",
    "DataLoader(ds, 8, True, sampler)",
    "OUT = '/tmp/out'",
    "CKPT = '/opt/ml/checkpoints'",
    "model = smp.DistributedModel(model)",
    "model.backward(loss)",
    "loss.backward()",
    "with torch.no_grad():",
    "try:",
    "except Exception:",
    "match x:",
    "    case 1:",
]


@st.composite
def near_python(draw: st.DrawFn) -> str:
    lines = draw(
        st.lists(
            st.tuples(st.integers(0, 3), st.sampled_from(_SNIPPETS)), min_size=1, max_size=30
        )
    )
    return "\n".join("    " * depth + line for depth, line in lines) + "\n"


@st.composite
def cut_fixtures(draw: st.DrawFn) -> str:
    """A real fixture, cut and spliced at random points: mostly valid Python, often not."""
    text = draw(st.sampled_from(_FIXTURE_TEXTS))
    start = draw(st.integers(0, len(text)))
    end = draw(st.integers(start, len(text)))
    return text[:start] + draw(st.text(max_size=5)) + text[end:]


_ANY_CONTEXT = st.builds(
    ScriptContext,
    training_compiler=st.booleans(),
    xla_distributed=st.booleans(),
    gpus_per_instance=st.none() | st.integers(0, 16),
    model_parallel=st.booleans(),
    model_parallel_fp16=st.booleans(),
    launcher=st.sampled_from([None, "torchrun", "pytorchddp", "smddp", "mpi", "smp-v1", "smp-v2"]),
    processes=st.none() | st.integers(0, 64),
    instance_type=st.sampled_from([None, "ml.p4d.24xlarge", "ml.trn1.32xlarge", "local_gpu"]),
    pytorch_version=st.sampled_from([None, "1.13.1", "2.2.0", "2.4.1", "2.5.1", "nonsense"]),
    tensor_parallel_degree=st.integers(0, 16),
    context_parallel_degree=st.integers(0, 4),
    expert_parallel_degree=st.integers(0, 4),
    hybrid_shard_degree=st.integers(0, 16),
    activation_offloading_set=st.booleans(),
    use_spot_instances=st.booleans(),
    checkpoint_dir=st.sampled_from(["/opt/ml/checkpoints", "/", "", "/local/ckpt"]),
    checkpoint_in_hyperparameters=st.booleans(),
)

_REGEX_PYTHON = st.from_regex(
    r"(import [a-z_.]+( as [a-z]+)?\n)?(def [a-z_]+\([a-z, =*]*\):\n)?"
    r"( {0,8}[a-z_.]+\(([a-z_=0-9'\"]+, ?)*\)\n){0,6}",
    fullmatch=True,
)


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.text() | near_python() | cut_fixtures() | _REGEX_PYTHON, context=_ANY_CONTEXT)
def test_no_source_text_crashes_the_checker(source: str, context: ScriptContext) -> None:
    findings = check_source(source, context, filename="fuzz.py")

    assert all(isinstance(f, Finding) for f in findings)
    # The rules are guarded so one bug cannot block a job; the guard must never be needed.
    assert not [f for f in findings if f.rule == "checker-failed"]
    assert all(f.line >= 0 and f.severity in ("error", "warning") for f in findings)
    assert findings == sorted(findings, key=lambda f: (f.file, f.line, f.rule))
