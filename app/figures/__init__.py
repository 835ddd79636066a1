"""Figures drawn by the server from finished results: heatmaps as SVG or PNG (heatmap/).

A layer of its own between app.core and app.web: it formats numbers and draws, and knows
nothing of requests or templates."""
