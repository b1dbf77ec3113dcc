"""Tests of the stores beside the conformance suite (``tests/conformance``, which runs every
test against every store): what only one engine has (``test_sqlite_only.py``,
``test_postgres_only.py``), and the store package's own structure, checked without a
database (``test_scoping.py``: the subject-scoping choke point; ``test_shape.py``: no SQL
written twice)."""
