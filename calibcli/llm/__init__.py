"""Language-model evaluation dumps and selective prediction (SPEC 11).

- :mod:`calibcli.llm.texts`: opening a dump (plain, ``.gz``, ``.zst``) and its JSON Lines, errors naming file and line.
- :mod:`calibcli.llm.confidence`: how log-likelihoods and token log-probabilities become probabilities
  (``--confidence``), each rule with its source.
- :mod:`calibcli.llm.items`: :class:`~calibcli.llm.items.Items`, what every reader returns (per-item
  probabilities over the choices and the target, or a confidence and a correctness), and its table.
- Readers, one module each: :mod:`~calibcli.llm.lm_eval` (lm-evaluation-harness ``--log_samples``),
  :mod:`~calibcli.llm.helm` (HELM run directories), :mod:`~calibcli.llm.openai` (chat completions and batch
  output), :mod:`~calibcli.llm.inspect_log` (Inspect eval logs), :mod:`~calibcli.llm.stated` (a table of stated
  confidences); :mod:`~calibcli.llm.readers` picks one by ``--from`` or by the content.
- :mod:`calibcli.llm.convert`: a dump as a temporary Arrow file that every command reads
  (:mod:`calibcli.io.converted`).
- :mod:`calibcli.llm.curves`, :mod:`calibcli.llm.accumulator`, :mod:`calibcli.llm.family`: ``calibcli selective``,
  the risk-coverage curve and its areas with bootstrap intervals.
"""
