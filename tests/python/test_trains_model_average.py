"""Model averaging under heavy pre-discard (RelayState(average="model")): the job of
test_trains_with_feedback (policy fixed, R = 0.5, 150 stages; random discard, as parameters have
no importance), the ranks averaging their parameters through the relay and keeping their own
where a chunk is missing (relay fill own). Both ranks above 60 % test accuracy, within 6 points
of each other (each keeps its own values in the chunks it missed)."""

import sys

import test_trains_with_feedback as base


def main():
    return base.run("model-average", "own", False, discard="random", max_spread=0.06,
                    average="model")


if __name__ == "__main__":
    sys.exit(main())
