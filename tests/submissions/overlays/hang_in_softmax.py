import signal

signal.signal(signal.SIGTERM, signal.SIG_IGN)  # ignoring SIGTERM must not save it


def masked_softmax(scores, mask=None):
    while True:
        pass
