#!/usr/bin/env python
"""Fine-tune a text classifier with the Hugging Face Trainer on SageMaker.

Written to pass `safe-estimators lint` with or without Training Compiler:

- the Trainer runs the loop: data sharding, the XLA device loader and `mark_step` are its job;
- every batch has the same shape (`padding="max_length"`), so XLA compiles the graph once;
- `_mp_fn(index)` is the entry torch_xla's `xla_spawn` calls once per GPU when the job runs
  on more than one GPU with the compiler (the `pytorchxla` distribution).
"""

import argparse
import os

import datasets
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    Trainer,
    TrainingArguments,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model_name_or_path", default="distilbert-base-uncased")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--num_labels", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--per_device_train_batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    # The Trainer's FSDP options ("full_shard auto_wrap"); empty: DDP, a full copy per GPU.
    parser.add_argument("--fsdp", default="")
    # QLoRA: the frozen weights in 4 bits and LoRA adapters (needs bitsandbytes and peft).
    parser.add_argument("--qlora", type=lambda text: text.lower() == "true", default=False)
    parser.add_argument("--train_dir", default=os.environ.get("SM_CHANNEL_TRAIN"))
    parser.add_argument("--output_dir", default=os.environ.get("SM_MODEL_DIR", "model"))
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)

    def tokenize(batch: dict) -> dict:
        # Static shapes: pad every sequence to the same length.
        return tokenizer(
            batch["text"],
            padding="max_length",
            truncation=True,
            max_length=args.max_seq_length,
        )

    train_dataset = datasets.load_from_disk(args.train_dir).map(tokenize, batched=True)
    if args.qlora:
        model = qlora_model(args)
    else:
        model = AutoModelForSequenceClassification.from_pretrained(
            args.model_name_or_path, num_labels=args.num_labels
        )
    training_args = TrainingArguments(
        output_dir=args.output_dir,
        num_train_epochs=args.epochs,
        per_device_train_batch_size=args.per_device_train_batch_size,
        learning_rate=args.learning_rate,
        logging_steps=50,
        save_strategy="no",
        report_to=[],
        fsdp=args.fsdp,
    )
    trainer = Trainer(
        model=model, args=training_args, train_dataset=train_dataset, tokenizer=tokenizer
    )
    trainer.train()
    trainer.save_model(args.output_dir)  # the Trainer saves from one process
    if trainer.is_world_process_zero():  # under torchrun every GPU runs this script
        tokenizer.save_pretrained(args.output_dir)


def qlora_model(args: argparse.Namespace):
    """The model's weights frozen in 4 bits (bitsandbytes NF4) with trainable LoRA adapters
    (peft). Under torchrun each process loads its copy onto its own GPU (LOCAL_RANK)."""
    import torch
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import BitsAndBytesConfig

    quantization = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_compute_dtype=torch.float16,  # V100 and T4 have no bfloat16
    )
    model = AutoModelForSequenceClassification.from_pretrained(
        args.model_name_or_path,
        num_labels=args.num_labels,
        quantization_config=quantization,
        device_map={"": int(os.environ.get("LOCAL_RANK", "0"))},
    )
    model = prepare_model_for_kbit_training(model)
    adapters = LoraConfig(task_type="SEQ_CLS", r=16, lora_alpha=32, lora_dropout=0.05)
    return get_peft_model(model, adapters)


def _mp_fn(index: int) -> None:
    # torch_xla's xla_spawn calls this in each of its processes (one per GPU).
    main()


if __name__ == "__main__":
    main()
