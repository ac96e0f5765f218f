"""Jobs: where work runs (:mod:`~bertkit.jobs.executors`: processes on this machine, or a Slurm
job array through submitit), used by ``bench run`` and ``predict --shards``."""
