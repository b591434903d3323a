"""How long the training-script checks take on a 10,000-line script. Run by hand:

    .venv/bin/python benchmarks/bench_script_checks.py [--lines 10000] [--runs 7]

Generates a script made of realistic blocks (torch_xla and AMP training loops, tokenizer calls,
os.environ writes, smp calls) so that every rule has work to do, checks it with every rule on,
and prints the median time next to a plain ``ast.parse`` of the same text. Parsing is the floor:
the ratio says what the analysis adds on top. Target: well under one second.
"""

from __future__ import annotations

import argparse
import ast
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from safe_estimators._script_checks import ScriptContext, check_script, check_source

HEADER = '''"""Generated benchmark script."""
import os

import smdistributed.modelparallel.torch as smp
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from transformers import AutoTokenizer, get_linear_schedule_with_warmup

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
'''

BLOCK = '''

def tokenize_{i}(batch):
    return tokenizer(batch["text"], padding="max_length", truncation=True, max_length=128)


class Model{i}(torch.nn.Module):
    def __init__(self, width={i}):
        super().__init__()
        self.layer = torch.nn.Linear(width, width)

    def forward(self, inputs):
        return self.layer(inputs).relu()


def train_{i}(model, dataset, args):
    os.environ["XLA_FLAGS_{i}"] = str(args.flags)
    device = xm.xla_device()
    sampler = DistributedSampler(dataset, num_replicas=xm.xrt_world_size(), rank=xm.get_ordinal())
    loader = pl.MpDeviceLoader(DataLoader(dataset, batch_size=32, sampler=sampler), device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr * {i})
    scheduler = get_linear_schedule_with_warmup(optimizer, 10, 1000)
    scaler = torch.cuda.amp.GradScaler()
    for step, (inputs, labels) in enumerate(loader):
        optimizer.zero_grad()
        with torch.autocast("cuda"):
            loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        scaler.scale(loss).backward()
        xm.reduce_gradients(optimizer)
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        xm.mark_step()
        if step % 100 == 0 and smp.rank() == 0:
            xm.master_print(f"model {i} step {{step}} loss {{loss.item():.4f}}")
    torch.save(model.state_dict(), f"/tmp/model-{i}.pt")
    return model
'''

FOOTER = '''

def _mp_fn(index):
    train_0(Model0(), None, None)
'''

EVERY_RULE = ScriptContext(
    training_compiler=True,
    xla_distributed=True,
    gpus_per_instance=8,
    model_parallel=True,
    model_parallel_fp16=True,
    # The launcher rules too: a multi-process spot job (SMP v1 keeps the smp rules on).
    launcher="smp-v1",
    processes=16,
    use_spot_instances=True,
)


def generate(lines: int) -> str:
    parts = [HEADER]
    count = HEADER.count("\n") + FOOTER.count("\n")
    i = 0
    while count < lines:
        block = BLOCK.format(i=i)
        parts.append(block)
        count += block.count("\n")
        i += 1
    parts.append(FOOTER)
    return "".join(parts)


def median_seconds(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median CPU time and median wall time. CPU time is the steadier number on a shared machine;
    wall time is what a user waits."""
    fn()  # warm-up
    cpu, wall = [], []
    for _ in range(runs):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    source = generate(args.lines)
    n_lines = source.count("\n")
    findings = check_source(source, EVERY_RULE)

    def parse_gc_on() -> object:
        return ast.parse(source)

    def parse_gc_off() -> object:
        # What check_source does around its own parse: the cyclic GC paused.
        gc.disable()
        try:
            return ast.parse(source)
        finally:
            gc.enable()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.py"
        path.write_text(source)
        rows = [
            ("ast.parse (gc on)", median_seconds(parse_gc_on, args.runs)),
            ("ast.parse (gc paused)", median_seconds(parse_gc_off, args.runs)),
            ("check_source", median_seconds(lambda: check_source(source, EVERY_RULE), args.runs)),
            ("check_script", median_seconds(lambda: check_script(path, EVERY_RULE), args.runs)),
        ]

    floor = rows[0][1][0]
    print(f"{n_lines:,} lines, {len(source):,} characters, {len(findings)} findings; "
          f"median of {args.runs} runs, every rule on")
    print(f"  {'':<22} {'cpu ms':>8} {'wall ms':>8} {'lines/s (cpu)':>14} {'x ast.parse':>12}")
    for name, (cpu, wall) in rows:
        print(f"  {name:<22} {cpu * 1000:8.1f} {wall * 1000:8.1f} {n_lines / cpu:>14,.0f} "
              f"{cpu / floor:12.2f}")

if __name__ == "__main__":
    main()
