"""Prices: the instance catalogue, the user's imported price overlay, price-list importers and the cost of a finding."""
