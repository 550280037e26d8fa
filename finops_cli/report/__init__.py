"""Reports: pure metrics over store tables (waste, prices, cost, savings) and their renderings."""
