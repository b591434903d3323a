"""GPT-2 pretraining with the SageMaker model parallel library v1 in fp16.

Shaped after AWS's train_gpt_simple.py example: smp.init, one GPU per process, the model built in
fp16 inside smp.model_creation, dynamic loss scaling, the LR scheduler on the wrapped optimizer,
and master-gradient clipping.
"""

import argparse
import os
import time

import smdistributed.modelparallel.torch as smp
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from transformers import AutoConfig, AutoModelForCausalLM, get_linear_schedule_with_warmup


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_name", type=str, default="gpt2-xl")
    parser.add_argument("--fp16", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--warmup_steps", type=int, default=100)
    parser.add_argument("--max_steps", type=int, default=5000)
    parser.add_argument("--train_batch_size", type=int, default=4)
    parser.add_argument("--grad_clip", type=float, default=1.0)
    parser.add_argument("--logging_freq", type=int, default=10)
    parser.add_argument("--checkpoint_dir", type=str, default="/opt/ml/checkpoints")
    parser.add_argument("--train_dir", type=str, default=os.environ.get("SM_CHANNEL_TRAIN"))
    return parser.parse_args()


@smp.step
def train_step(model, input_ids, attention_mask):
    loss = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids)["loss"]
    model.backward(loss)
    return loss


def main():
    args = parse_args()
    smp.init()
    # One process per GPU: pin this process to its own device before anything touches CUDA.
    torch.cuda.set_device(smp.local_rank())
    device = torch.device("cuda")

    config = AutoConfig.from_pretrained(args.model_name)
    with smp.model_creation(
        tensor_parallelism=smp.tp_size() > 1,
        dtype=torch.float16 if args.fp16 else torch.get_default_dtype(),
    ):
        model = AutoModelForCausalLM.from_config(config)
    model = smp.DistributedModel(model, trace_device="gpu")

    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    optimizer = smp.DistributedOptimizer(
        optimizer,
        static_loss_scale=None,
        dynamic_loss_scale=True,
        dynamic_loss_args={"scale_window": 1000, "min_scale": 1, "delayed_shift": 2},
    )
    lr_scheduler = get_linear_schedule_with_warmup(
        optimizer.optimizer, args.warmup_steps, args.max_steps
    )

    dataset = torch.load(os.path.join(args.train_dir, "train.pt"))
    sampler = DistributedSampler(
        dataset, num_replicas=smp.dp_size(), rank=smp.dp_rank(), shuffle=True
    )
    loader = DataLoader(dataset, batch_size=args.train_batch_size, sampler=sampler, drop_last=True)

    start = time.time()
    for step, batch in enumerate(loader):
        input_ids = batch["input_ids"].to(device)
        attention_mask = batch["attention_mask"].to(device)
        optimizer.zero_grad(set_to_none=True)
        loss_mb = train_step(model, input_ids, attention_mask)
        loss = loss_mb.reduce_mean()
        if args.grad_clip > 0:
            optimizer.clip_master_grads(args.grad_clip)
        optimizer.step()
        lr_scheduler.step()
        if smp.rank() == 0 and step % args.logging_freq == 0:
            print(f"step {step} loss {loss.item():.4f} {time.time() - start:.1f}s")
        if step + 1 >= args.max_steps:
            break

    if smp.rdp_rank() == 0:
        smp.save(
            {"model": model.local_state_dict(), "optimizer": optimizer.local_state_dict()},
            os.path.join(args.checkpoint_dir, "fullmodel.pt"),
            partial=True,
        )
    smp.barrier()


if __name__ == "__main__":
    main()
