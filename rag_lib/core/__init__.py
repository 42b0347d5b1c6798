"""The workbook's small core besides config, errors, io and text: documents and chunks, the lazy registry,
redaction, Hugging Face file lookup, the casebook's figures and the planted-instruction detector."""
