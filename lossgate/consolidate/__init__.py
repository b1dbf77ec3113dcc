"""Consolidation: snapshot, selection, compression, gating, storage and publication."""
