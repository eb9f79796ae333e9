"""What every analyzer shares: the findings model, the batched metric fetcher, the publisher."""
