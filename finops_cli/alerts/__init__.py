"""Alerts: what the store knows, pushed to the people who act on it.

Realised savings per run, team or workload (:mod:`.savings`), budgets with thresholds on actual and forecast
spend (:mod:`.budgets`, :mod:`.forecast`), cost anomalies with their top contributors (:mod:`.anomalies`), and
their delivery to Slack, PagerDuty, Microsoft Teams and signed webhooks (:mod:`.notify`). Everything here reads
the store through its query engine and does no terminal work: the CLI renders and maps exit codes.
"""
