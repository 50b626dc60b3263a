"""A real Keras 3 model on the torch backend, for the suite: a small dense network fitting
noisy points of a line on CPU (nothing downloaded, nothing read but its arguments).

    python train.py [--epochs=4] [--verbose=1] [--fail_at_epoch=N]

`--verbose` is Keras' own: 1 draws its progress bar, 2 prints one line an epoch. What Keras
itself recorded lands beside the log, for the tests to compare with what rtrain read from
it: `history.json` (`History.history`: each epoch's loss and val_loss, in order).
`--fail_at_epoch` raises ValueError as that epoch begins (as a user's bug would).
"""

import argparse
import json
import os

os.environ.setdefault("KERAS_BACKEND", "torch")

import keras  # noqa: E402
import numpy as np  # noqa: E402


class FailAt(keras.callbacks.Callback):
    def __init__(self, epoch: int) -> None:
        super().__init__()
        self.fail_epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):  # type: ignore[no-untyped-def]
        if epoch + 1 == self.fail_epoch:
            raise ValueError(f"the test trainer fails at epoch {self.fail_epoch}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--verbose", type=int, default=1)
    parser.add_argument("--fail_at_epoch", type=int, default=0)
    args = parser.parse_args()

    keras.utils.set_random_seed(0)
    x = np.random.rand(640, 4).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")) + 0.1
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(1)])  # fmt: skip
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    callbacks = [FailAt(args.fail_at_epoch)] if args.fail_at_epoch else []
    history = model.fit(
        x, y, batch_size=32, epochs=args.epochs, validation_split=0.25,
        verbose=args.verbose, callbacks=callbacks,
    )  # fmt: skip
    with open("history.json", "w") as f:
        json.dump(history.history, f)


if __name__ == "__main__":
    main()
