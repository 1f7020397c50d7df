# SPDX-License-Identifier: BSD-3-Clause
"""The check every test session runs around each launch of the operator's kernel: its inputs come
back unchanged (the launcher itself checks the guard canaries of every GM buffer)."""
from __future__ import annotations

from collections.abc import Mapping

# GM arguments of the operator's kernel that it may only read (names as simulate passes them).
OPERATOR_INPUTS = ("dy", "x", "rstd", "gamma", "dres", "tiling")


class InputChanged(AssertionError):
    """A kernel launch wrote into one of the operator's input buffers."""


def inputs_unchanged(name: str, args):
    """A launch check (ascendc_twin.add_launch_check): copies the operator's named inputs before the
    launch and raises InputChanged after it when one of them differs."""
    names = [n for n in OPERATOR_INPUTS if isinstance(args, Mapping) and args.get(n) is not None]
    before = {n: args[n].copy() for n in names}

    def after() -> None:
        for n in names:
            if before[n].tobytes() != args[n].tobytes():
                raise InputChanged(f"the launch of {name} changed its input {n}")

    return after
