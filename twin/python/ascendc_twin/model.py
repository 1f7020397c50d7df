# SPDX-License-Identifier: BSD-3-Clause
"""The performance model's constants for one SoC: the SoC facts of include/twin/platform.h and the
model-only constants of include/twin/model_constants.h (kModelTable, with their sources in
kModelFields), both read through the extension so that every figure has one source."""
from __future__ import annotations

from dataclasses import dataclass, field

from . import resources, soc_info


@dataclass(frozen=True)
class Model:
    soc: dict                                  # the soc_table row
    constants: dict                            # model-only constants by name
    sources: dict = field(default_factory=dict)  # name -> where the constant comes from

    @property
    def cores(self) -> int:
        return self.soc["vector_cores"]

    @property
    def hbm_bytes_per_us(self) -> float:
        return self.soc["hbm_gbps"] * 1e3

    def cycles_to_us(self, cycles: float) -> float:
        return cycles / (self.soc["clock_ghz"] * 1e3)

    def hbm_share(self, active_cores: int) -> float:
        """One core's share of HBM bandwidth in bytes per cycle."""
        return self.soc["hbm_gbps"] / self.soc["clock_ghz"] / max(active_cores, 1)

    def __getitem__(self, name: str) -> float:
        return self.constants[name]


def load_model(soc: str = "Ascend910B2") -> Model:
    """The model for `soc`; InvalidInputError when the SoC is not supported."""
    _twin = resources.extension()

    row = soc_info(soc)
    table = {r["soc"]: r for r in _twin.model_table()}
    constants = {k: v for k, v in table[soc].items() if k != "soc"}
    return Model(soc=row, constants=constants, sources=dict(_twin.model_sources()))
