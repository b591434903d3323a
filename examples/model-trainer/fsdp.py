"""A minimal FSDP training loop under torchrun: one process per GPU, synthetic data."""

import argparse
import functools
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max_steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=2e-4)
    args = parser.parse_args()

    dist.init_process_group(backend="nccl")
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))  # set by torchrun
    torch.cuda.set_device(device)

    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)])
    model = FSDP(
        model,
        auto_wrap_policy=functools.partial(size_based_auto_wrap_policy, min_num_params=10**6),
        device_id=device,
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for step in range(args.max_steps):
        batch = torch.randn(8, 1024, device=device)
        loss = model(batch).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % 100 == 0 and dist.get_rank() == 0:
            print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
