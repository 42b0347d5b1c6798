"""What an analyst runs by hand: the rank explorer and the check of computed vectors against the pinned ones."""
