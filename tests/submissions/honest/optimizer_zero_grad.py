_probe = torch.nn.Linear(4, 4)
_optimizer = torch.optim.SGD(_probe.parameters(), lr=0.1)
_optimizer.zero_grad()  # its first call imports torch._dynamo
