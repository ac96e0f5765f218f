"""``bertkit bench``: judge encoders on a field's benchmark suite, the way the papers do.

A suite is a YAML file (:mod:`bertkit.bench.suite`; shipped ones under ``bertkit/bench/suites/``):
per task the registered data set, the task kind, the metric by name and the family, both as the
task declares them (:class:`bertkit.tasks.base.SuiteSpec`, read by :mod:`bertkit.bench.declarations`),
the fine-tuning recipe, the ``lite`` caps, and published reference rows. The runner
(:mod:`bertkit.bench.runner`) fine-tunes every (encoder, task, seed) as a stage with its own result
file; the report (:mod:`bertkit.bench.report`) folds the result files into per-task means, family
means, the BLURB score (Gu et al. 2021, §3), significance against a baseline (almost stochastic
order, Dror et al. 2019; a paired bootstrap over test items) and the leaderboard.

Layering: nothing below imports this package; it reaches tasks only through
:mod:`bertkit.tasks.registry` (and names none: ``tests/test_bench_names_no_task.py``) and
fine-tunes through ``python -m bertkit finetune`` subprocesses.
"""
