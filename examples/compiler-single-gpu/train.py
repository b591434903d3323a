#!/usr/bin/env python
"""run_mlm.py's shape: the Hugging Face Trainer handles sharding, the device loader, the step.

Only _mp_fn(index) and the padding are the script's business under Training Compiler.
"""

import functools
import logging
import operator
import sys
from dataclasses import dataclass, field

import datasets
import transformers
from transformers import (
    AutoConfig,
    AutoModelForMaskedLM,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    HfArgumentParser,
    Trainer,
    TrainingArguments,
    set_seed,
)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="bert-base-uncased")


@dataclass
class DataTrainingArguments:
    dataset_name: str = field(default="wikitext")
    dataset_config_name: str = field(default="wikitext-2-raw-v1")
    max_seq_length: int = field(default=128)
    pad_to_max_length: bool = field(default=True)
    line_by_line: bool = field(default=False)
    mlm_probability: float = field(default=0.15)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(handlers=[logging.StreamHandler(sys.stdout)], level=logging.INFO)
    transformers.utils.logging.set_verbosity_info()
    set_seed(training_args.seed)

    raw_datasets = datasets.load_dataset(data_args.dataset_name, data_args.dataset_config_name)
    config = AutoConfig.from_pretrained(model_args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    model = AutoModelForMaskedLM.from_pretrained(model_args.model_name_or_path, config=config)
    max_seq_length = data_args.max_seq_length

    if data_args.line_by_line:
        padding = "max_length" if data_args.pad_to_max_length else False

        def tokenize_function(examples):
            examples["text"] = [line for line in examples["text"] if line and not line.isspace()]
            return tokenizer(
                examples["text"],
                padding=padding,
                truncation=True,
                max_length=max_seq_length,
                return_special_tokens_mask=True,
            )

        tokenized = raw_datasets.map(tokenize_function, batched=True, remove_columns=["text"])
    else:

        def tokenize_function(examples):
            return tokenizer(examples["text"], return_special_tokens_mask=True)

        def group_texts(examples):
            concatenated = {k: functools.reduce(operator.iadd, examples[k], []) for k in examples}
            total_length = (len(concatenated["input_ids"]) // max_seq_length) * max_seq_length
            return {
                k: [t[i : i + max_seq_length] for i in range(0, total_length, max_seq_length)]
                for k, t in concatenated.items()
            }

        tokenized = raw_datasets.map(tokenize_function, batched=True, remove_columns=["text"])
        tokenized = tokenized.map(group_texts, batched=True)

    data_collator = DataCollatorForLanguageModeling(
        tokenizer=tokenizer, mlm_probability=data_args.mlm_probability
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=tokenized["train"] if training_args.do_train else None,
        eval_dataset=tokenized["validation"] if training_args.do_eval else None,
        tokenizer=tokenizer,
        data_collator=data_collator,
    )
    if training_args.do_train:
        train_result = trainer.train()
        trainer.save_model()
        trainer.log_metrics("train", train_result.metrics)
    if training_args.do_eval:
        trainer.log_metrics("eval", trainer.evaluate())


def _mp_fn(index):
    # For xla_spawn (TPUs and Training Compiler's pytorchxla)
    main()


if __name__ == "__main__":
    main()
