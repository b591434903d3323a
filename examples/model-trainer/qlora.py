"""A QLoRA fine-tune: the frozen 7B weights loaded in 4 bits, LoRA adapters trained."""

import argparse

import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, BitsAndBytesConfig


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_id", default="meta-llama/Llama-2-7b-hf")
    parser.add_argument("--max_steps", type=int, default=100)
    parser.add_argument("--lr", type=float, default=2e-4)
    args = parser.parse_args()

    quantization = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_compute_dtype=torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(args.model_id, quantization_config=quantization)
    model = get_peft_model(model, LoraConfig(r=16, target_modules=["q_proj", "v_proj"]))
    model.cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for _ in range(args.max_steps):
        batch = torch.randint(0, 32000, (1, 512), device="cuda")
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained("/opt/ml/model")


if __name__ == "__main__":
    main()
