# SPDX-License-Identifier: BSD-3-Clause
"""The anchor kernel's host side (a model of ops-nn's A2 RmsNormGrad schedule on the twin) and the
PERFORMANCE.md anchor tables built from a bench JSON. The kernel sources are package data
(benchmarks/anchor/ in the repository's layout, found through rmsnorm_backward.resources)."""
