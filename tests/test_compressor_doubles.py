"""The compressor doubles of :mod:`lossgate.testing.compressors` on their own: the output each
edits, and the one it refuses to edit."""

from __future__ import annotations

import pytest

from lossgate.consolidate.compressor import CompressionRequest
from lossgate.testing.compressors import LOSSY_COMPRESSORS, MissingFieldCompressor, NonJsonCompressor

REQUEST = CompressionRequest(tenant_id="acme", subject_id="user-17", facts=(), predicates={})


def test_missing_field_removes_the_field_it_names_and_nothing_else() -> None:
    out = MissingFieldCompressor(("subject_id",)).compress(REQUEST)

    assert "subject_id" not in out and out["tenant_id"] == "acme" and "summary" in out


@pytest.mark.parametrize("double", [MissingFieldCompressor, *LOSSY_COMPRESSORS], ids=lambda d: d.__name__)
def test_a_double_that_edits_json_refuses_a_compressor_that_answers_in_text(double: type) -> None:
    with pytest.raises(TypeError, match="wraps compressors that return a dict, got text"):
        double(inner=NonJsonCompressor()).compress(REQUEST)
