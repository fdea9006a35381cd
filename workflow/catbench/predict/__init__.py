"""Scale prediction: a load's time at a row count from smaller runs ("rungs") of the same
study with the memories scaled so table ÷ pool matches (model.md). Reads result files
only, like the report; imports only ``core``."""
