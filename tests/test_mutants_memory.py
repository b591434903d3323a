"""The memory verdict's words where ``./dev mutate`` found them unpinned: an error that holds
under every reading says, word for word, what the most optimistic reading assumed.

The job is test_memory_verdicts' DeepSpeed ZeRO-3 one without bf16 (Llama-3.3-70B on 2 x
ml.p4d.24xlarge): over the A100's memory even at 8 bytes per parameter.
"""

from __future__ import annotations

from pathlib import Path

import test_memory_verdicts as verdicts


def test_an_error_under_every_reading_names_the_8_bytes_reading_in_full(tmp_path: Path) -> None:
    script = verdicts.DEEPSPEED_ZERO_3.replace(', "bf16": {"enabled": True}', "")
    problem = verdicts.refused(tmp_path, script, verdicts.LLAMA_3_3_70B, "ml.p4d.24xlarge", 2)
    assert (
        "It cannot fit under any reading of what the checks cannot see: even at 8 bytes per "
        "parameter (16-bit weights with no fp32 master copy, 16-bit Adam moments), it needs "
    ) in problem.message
