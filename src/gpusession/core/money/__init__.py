"""The package window, rates, cost per accepted corpus, and the order and payment timeline."""
