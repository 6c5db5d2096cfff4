"""What every stage module shares: its command line (options, args, cli), how it runs (runtime) and the warm interpreter `make repro` forks stages from (preload)."""
