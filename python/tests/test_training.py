#!/usr/bin/python3
"""graphi.TrainingSession against PyTorch (ctest: python/training).

A PyTorch MLP is exported to ONNX; graphi trains the exported graph while PyTorch trains the
module from the same initial weights on the same batch: the losses agree at every step, and the
saved model's inference equals the trained module's output.
Run by hand: PYTHONPATH=build/python /usr/bin/python3 -m unittest -v test_training (from python/tests).
"""
import os
import tempfile
import unittest

import numpy as np

import graphi

try:
    import torch
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TrainingSessionTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(3)
        self.model = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 3))
        self.x = torch.randn(8, 6)
        self.labels = torch.randint(0, 3, (8,))
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "mlp.onnx")
        torch.onnx.export(self.model, (self.x,), self.path, input_names=["x"], output_names=["logits"],
                          opset_version=13)

    def tearDown(self):
        self.dir.cleanup()

    def test_sgd_with_momentum_follows_torch_and_saves(self):
        ts = graphi.TrainingSession(self.path, loss="ce", optimizer="sgd", lr=0.2, momentum=0.9)
        self.assertEqual(sorted(t.name for t in ts.inputs), ["labels", "x"])
        self.assertEqual(len(ts.weights()), 4)
        opt = torch.optim.SGD(self.model.parameters(), lr=0.2, momentum=0.9)
        batch = {"x": self.x.numpy(), "labels": self.labels.numpy().astype(np.int64)}
        for step in range(30):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(self.model(self.x), self.labels)
            loss.backward()
            opt.step()
            got = ts.train_step(batch)
            self.assertLess(abs(got - loss.item()), 1e-3, "step %d: graphi %g, torch %g" % (step, got, loss.item()))
        self.assertEqual(ts.steps, 30)
        saved = os.path.join(self.dir.name, "trained.graphi")
        ts.save(saved)
        out = graphi.Session(saved).run({"x": self.x.numpy()})["logits"]
        with torch.no_grad():
            want = self.model(self.x).numpy()
        self.assertLess(np.abs(out - want).max(), 1e-3)

    def test_adam_follows_torch(self):
        ts = graphi.TrainingSession(self.path, loss="ce", optimizer="adam", lr=0.01)
        opt = torch.optim.Adam(self.model.parameters(), lr=0.01)
        batch = {"x": self.x.numpy(), "labels": self.labels.numpy().astype(np.int64)}
        for step in range(30):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(self.model(self.x), self.labels)
            loss.backward()
            opt.step()
            got = ts.train_step(batch)
            self.assertLess(abs(got - loss.item()), 1e-3, "step %d" % step)

    def test_errors(self):
        ts = graphi.TrainingSession(self.path)
        with self.assertRaises(graphi.Error) as e:
            ts.train_step({"x": self.x.numpy()})
        self.assertIn("labels", str(e.exception))
        with self.assertRaises(graphi.Error):
            graphi.TrainingSession(self.path, optimizer="lbfgs")


if __name__ == "__main__":
    unittest.main()
