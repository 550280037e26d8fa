"""Imported by the chart helpers' fork server (:func:`finops_cli.report.drawing.start`) before it forks a helper.

Importing it imports matplotlib and the chart modules and draws one figure, so every helper forked from the server
starts warm: nothing is imported twice, however many helpers draw.
"""

from finops_cli.report.drawing import _warm

_warm()
