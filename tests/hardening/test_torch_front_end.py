# SPDX-License-Identifier: BSD-3-Clause
"""The torch front end applies the operator's rules in one place (torch/_validate.py): each call
below is refused with InvalidInputError and the sentence the operator gives, before anything runs,
and the same call with the rule met runs and matches the float64 golden's forward."""
from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the torch front end needs torch")

from rmsnorm_backward.errors import InvalidInputError  # noqa: E402
from rmsnorm_backward.torch import add_rms_norm, rms_norm  # noqa: E402

ROWS = {
    "offset without gamma": (lambda x, g: rms_norm(x, None, gamma_offset=1.0, normalized_shape=(8,)),
                             "gamma_offset must be 0 without gamma (got 1)."),
    "normalized_shape is not gamma's shape": (lambda x, g: rms_norm(x, g, normalized_shape=(4, 8)),
                                              "normalized_shape [4, 8] must equal gamma's shape [8]."),
    "normalized_shape of another size": (lambda x, g: rms_norm(x, g, normalized_shape=(6,)),
                                         "normalized_shape [6] must equal gamma's shape [8]."),
    "add_rms_norm without gamma": (lambda x, g: add_rms_norm(x, x, None),
                                   "gamma must be a tensor: add_rms_norm has no form without gamma (got None)."),
    "eps a string": (lambda x, g: rms_norm(x, g, eps="1e-6"), "eps must be a real number or None (got '1e-6')."),
    "add_rms_norm eps a string": (lambda x, g: add_rms_norm(x, x, g, eps="1e-6"),
                                  "eps must be a real number or None (got '1e-6')."),
    "normalized_shape empty without gamma": (lambda x, g: rms_norm(x, None, normalized_shape=()),
                                             "normalized_shape must name at least one trailing dim of x (got ())."),
}
FIXED = {
    "offset without gamma": lambda x, g: rms_norm(x, None, normalized_shape=(8,)),
    "normalized_shape is not gamma's shape": lambda x, g: rms_norm(x, g, normalized_shape=(8,)),
    "normalized_shape of another size": lambda x, g: rms_norm(x, g, normalized_shape=[8]),
    "add_rms_norm without gamma": lambda x, g: add_rms_norm(x, x, g)[0],
    "eps a string": lambda x, g: rms_norm(x, g, eps=1e-6),
    "add_rms_norm eps a string": lambda x, g: add_rms_norm(x, x, g, eps=1e-6)[0],
    "normalized_shape empty without gamma": lambda x, g: rms_norm(x, None, normalized_shape=(8,)),
}


@pytest.mark.parametrize("case", list(ROWS))
def test_front_end_rule_is_one_sentence_and_the_met_rule_runs(rng, case):
    x = torch.from_numpy(rng.standard_normal((4, 8)).astype(np.float32))
    g = torch.from_numpy(rng.uniform(0.5, 1.5, 8).astype(np.float32))
    call, sentence = ROWS[case]
    with pytest.raises(InvalidInputError, match=f"^{re.escape(sentence)}$"):
        call(x, g)
    y = FIXED[case](x, g).double().numpy()
    s = (x + x if "add_rms_norm" in case else x).double().numpy()
    scale = 1.0 if "without gamma" in case and "add" not in case else g.double().numpy()
    eps = 1e-6
    expected = s / np.sqrt(np.mean(s * s, axis=-1, keepdims=True) + eps) * scale
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
