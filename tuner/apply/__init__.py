"""Applying a plan persistently: stable identities, the rendered files, the journal of applies."""
