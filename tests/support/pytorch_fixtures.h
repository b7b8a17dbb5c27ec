// The PyTorch fixtures of tests/data/pytorch_rnn (nn.LSTM/GRU/RNN outputs and the PhasedLSTM
// reference, written by gen_pytorch_rnn.py): regenerated into a scratch directory when
// /usr/bin/python3 can import torch, else the committed copies.
#pragma once

#include <filesystem>
#include <string>

namespace graphi::test {

struct PytorchFixtures {
  std::filesystem::path dir;  // one sub-directory per case, each with case.json
  bool regenerated = false;   // true: written just now by the script with this machine's torch
  std::string note;           // why the committed fixtures were used (for WARN)
};

// Runs gen_pytorch_rnn.py into scratch_dir("pytorch_rnn_<tag>") (one tag per test case, so test
// processes running at once do not share a directory). Exit 77 (no torch) or a missing python
// falls back to the committed directory; any other failure of the script is reported in `note`
// and also falls back (the committed files are the contract). The environment variable
// GRAPHI_PYTORCH_FIXTURES=committed skips the script (to check the committed files).
PytorchFixtures pytorch_fixtures(const std::string& tag);

}  // namespace graphi::test
