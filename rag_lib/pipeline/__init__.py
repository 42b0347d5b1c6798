"""The stages assembled for a snapshot (the workbench), and one question taken through them (answer, explain)."""
