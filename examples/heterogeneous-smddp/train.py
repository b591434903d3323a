#!/usr/bin/env python
"""One script, two instance groups: SageMaker runs it on every host of the cluster.

AWS's heterogeneous-cluster guide: every group shares the image and the script, so the script
finds out which group it runs in and forks. Here the "gpu" group trains under SMDDP (the
distribution names only that group) and the "data" group prepares the tokens it reads.
"""

import json
import os

import torch

RESOURCE_CONFIG = "/opt/ml/input/config/resourceconfig.json"


def current_group() -> str:
    """The instance group of this host: the toolkit's variable, else the resource config."""
    group = os.environ.get("SM_CURRENT_INSTANCE_GROUP")
    if group:
        return group
    with open(RESOURCE_CONFIG) as config:
        return json.load(config)["current_group_name"]


def prepare_data() -> None:
    """The CPU group: tokenise the training channel into fixed-length blocks."""
    source = os.environ["SM_CHANNEL_TRAIN"]
    blocks = []
    for name in sorted(os.listdir(source)):
        with open(os.path.join(source, name), "rb") as text:
            data = torch.frombuffer(bytearray(text.read()), dtype=torch.uint8).long()
        usable = len(data) // 128 * 128
        blocks.append(data[:usable].view(-1, 128))
    print(f"data group: {sum(len(b) for b in blocks)} blocks of 128 tokens ready")


def train() -> None:
    """The GPU group: SMDDP's backend for torch.distributed, one process per GPU."""
    import smdistributed.dataparallel.torch.torch_smddp  # noqa: F401  (registers "smddp")
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    dist.init_process_group(backend="smddp")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)

    model = torch.nn.Sequential(
        torch.nn.Embedding(256, 512), torch.nn.Linear(512, 256)
    ).cuda(local_rank)
    model = DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(model.parameters(), lr=float(os.environ.get("SM_HP_LR", 1e-4)))

    tokens = torch.randint(0, 256, (4096, 129))
    dataset = TensorDataset(tokens[:, :-1], tokens[:, 1:])
    batch_size = int(os.environ.get("SM_HP_PER_DEVICE_TRAIN_BATCH_SIZE", 32))
    sampler = DistributedSampler(dataset)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for inputs, labels in DataLoader(dataset, batch_size=batch_size, sampler=sampler):
            logits = model(inputs.cuda(local_rank))
            loss = torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), labels.cuda(local_rank).flatten()
            )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    if dist.get_rank() == 0:
        path = os.path.join(os.environ["SM_MODEL_DIR"], "model.pt")
        torch.save(model.module.state_dict(), path)
    dist.destroy_process_group()


if __name__ == "__main__":
    if current_group() == "gpu":
        train()
    else:
        prepare_data()
