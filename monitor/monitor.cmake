# cupmon::monitor targets (need CUPTI headers). Owned by the monitor work.
