"""The sections of scripts/bench, one module per concern; importing a module registers its sections."""
