#!/usr/bin/env python
"""Masked-language-model fine-tuning with a custom torch_xla loop, for SageMaker Training Compiler.

Shaped after Hugging Face's run_mlm_no_trainer.py, with the changes the Training Compiler guide
asks for: fixed-length padding, a DistributedSampler and MpDeviceLoader per worker, gradients
all-reduced before they are unscaled and clipped, the step marked before logging, and _mp_fn(index)
for torch_xla's xla_spawn.
"""

import argparse
import logging
import math
import os

import datasets
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch_xla.amp import GradScaler, autocast
from transformers import (
    AutoConfig,
    AutoModelForMaskedLM,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    get_scheduler,
)

logger = logging.getLogger(__name__)


def parse_args():
    parser = argparse.ArgumentParser(description="Fine-tune a masked language model on XLA")
    parser.add_argument("--model_name_or_path", type=str, default="roberta-base")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--per_device_train_batch_size", type=int, default=24)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--weight_decay", type=float, default=0.0)
    parser.add_argument("--num_train_epochs", type=int, default=3)
    parser.add_argument("--num_warmup_steps", type=int, default=0)
    parser.add_argument("--max_grad_norm", type=float, default=1.0)
    parser.add_argument("--mlm_probability", type=float, default=0.15)
    parser.add_argument("--logging_steps", type=int, default=50)
    parser.add_argument(
        "--output_dir", type=str, default=os.environ.get("SM_MODEL_DIR", "/opt/ml/model")
    )
    parser.add_argument("--train_dir", type=str, default=os.environ.get("SM_CHANNEL_TRAIN"))
    return parser.parse_args()


def load_train_dataset(args, tokenizer):
    raw = datasets.load_from_disk(args.train_dir)

    def tokenize_function(examples):
        # Static shapes: every batch has the same sequence length, so XLA compiles once.
        return tokenizer(
            examples["text"],
            padding="max_length",
            truncation=True,
            max_length=args.max_seq_length,
            return_special_tokens_mask=True,
        )

    return raw.map(tokenize_function, batched=True, remove_columns=["text"])


def build_optimizer(model, args):
    no_decay = ["bias", "LayerNorm.weight"]
    groups = [
        {
            "params": [
                p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)
            ],
            "weight_decay": args.weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    return torch.optim.AdamW(groups, lr=args.learning_rate)


def main():
    args = parse_args()
    device = xm.xla_device()
    world_size = xm.xrt_world_size()

    config = AutoConfig.from_pretrained(args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    model = AutoModelForMaskedLM.from_pretrained(args.model_name_or_path, config=config).to(device)

    train_dataset = load_train_dataset(args, tokenizer)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=args.mlm_probability)
    sampler = DistributedSampler(
        train_dataset, num_replicas=world_size, rank=xm.get_ordinal(), shuffle=True
    )
    train_loader = DataLoader(
        train_dataset,
        batch_size=args.per_device_train_batch_size,
        sampler=sampler,
        collate_fn=collator,
        drop_last=True,
    )
    device_loader = pl.MpDeviceLoader(train_loader, device)

    optimizer = build_optimizer(model, args)
    steps_per_epoch = math.ceil(len(train_loader))
    lr_scheduler = get_scheduler(
        "linear",
        optimizer=optimizer,
        num_warmup_steps=args.num_warmup_steps,
        num_training_steps=steps_per_epoch * args.num_train_epochs,
    )
    scaler = GradScaler()

    xm.master_print(f"training on {world_size} workers, {steps_per_epoch} steps per epoch")
    for epoch in range(args.num_train_epochs):
        model.train()
        sampler.set_epoch(epoch)
        for step, batch in enumerate(device_loader):
            optimizer.zero_grad()
            with autocast(device):
                loss = model(**batch).loss
            scaler.scale(loss).backward()
            xm.reduce_gradients(optimizer)
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            lr_scheduler.step()
            xm.mark_step()
            if step % args.logging_steps == 0:
                xm.master_print(f"epoch {epoch} step {step} loss {loss.item():.4f}")

    xm.rendezvous("training_end")
    if xm.is_master_ordinal():
        model.save_pretrained(args.output_dir, save_function=xm.save)
        tokenizer.save_pretrained(args.output_dir)


def _mp_fn(index):
    # xla_spawn starts one process per GPU and calls this in each.
    main()


if __name__ == "__main__":
    main()
