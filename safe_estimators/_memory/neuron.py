"""Trainium as the memory estimate sees it: one training process per NeuronCore.

A Neuron training process drives one logical NeuronCore, and the cores of a chip share its
device memory (AWS Neuron docs, "Trainium Architecture": 32 GiB per Trainium chip, 2
NeuronCore-v2; "Trainium2 Architecture": 96 GiB per chip, 8 NeuronCore-v3 grouped two by two
under the default logical NeuronCore configuration, so 4 logical cores). So the estimate divides
the job over ``neuron_cores`` devices of ``memory / cores`` each: 16 GiB per core on ml.trn1,
24 GiB on ml.trn2 (Neuron's "Best practices for training": "64 ranks per instance and
approximately 24 GiB of HBM per rank" on trn2.48xlarge).
"""

from __future__ import annotations

import attrs

import instance_catalog


def per_core(instance: instance_catalog.InstanceType) -> instance_catalog.InstanceType:
    """``instance`` with its NeuronCores as the accelerators and each core's share of its
    chip's memory; other types (and Neuron types whose figures are unknown) unchanged."""
    cores = instance.neuron_cores
    mib = instance.accelerator_memory_mib
    if instance.accelerator_kind != "neuron" or not cores or not mib:
        return instance
    return attrs.evolve(
        instance,
        accelerator_count=cores,
        accelerator_memory_mib=mib * instance.accelerator_count // cores,
        accelerator_name=f"{instance.accelerator_name} NeuronCore",
    )
