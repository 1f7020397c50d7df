# SPDX-License-Identifier: BSD-3-Clause
"""The code generator behind `rmsnorm-backward gen`: every file that restates the operator's interface,
rendered from op_def with the jinja2 templates of this package (generate.py)."""
