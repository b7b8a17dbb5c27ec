#!/usr/bin/env node
// ONNX Runtime peer of graphi's RNN benchmark (issue 4), driven by run_all.py over stdin/stdout.
//
//   node ort_peer.js --threads T
//
// Uses the npm package onnxruntime-node (installed next to this file by scripts/bench_rnn.sh
// with ONNXRUNTIME_NODE_INSTALL=skip). ORT's CPU LSTM/GRU kernels are DeepCPU's
// implementation. Session options: sequential execution mode, intra-op threads = T, inter-op
// threads = 1, all graph optimizations.
//
// Commands (one per line), each answered by one JSON line:
//   prepare CELL H B S DIR   creates the session for DIR/model.onnx (exported from PyTorch by
//                            torch_peer.py), runs it on DIR/X.npy and answers the max abs
//                            difference of its Y to DIR/Y_graphi_t<T>.npy
//   run CELL H B S BUDGET_MS MIN_SAMPLES
//                            times `await session.run({X}, ['Y'])` for BUDGET_MS (at least
//                            MIN_SAMPLES samples) after one warm-up
//   quit
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

// Reads a little-endian float32 C-order .npy file: {shape, data: Float32Array}.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  if (!header.includes("'<f4'") || header.includes("'fortran_order': True"))
    throw new Error(`${file}: expected little-endian float32 in C order, header ${header}`);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').map((s) => s.trim())
    .filter((s) => s.length).map(Number);
  const off = start + headerLen;
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; ++i) data[i] = buf.readFloatLE(off + 4 * i);
  return {shape, data};
}

async function main() {
  const ti = process.argv.indexOf('--threads');
  const threads = ti > 0 ? Number(process.argv[ti + 1]) : NaN;
  if (!(threads >= 1)) {
    emit({kind: 'error', message: 'usage: node ort_peer.js --threads T'});
    return 2;
  }
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    emit({kind: 'error', message: `cannot load onnxruntime-node: ${e.message}`});
    return 1;
  }
  emit({kind: 'ready', onnxruntime: ort.env.versions ? ort.env.versions.node : 'unknown',
        node: process.version});
  const sessions = new Map();  // "cell h b s" -> {session, feeds}
  const rl = readline.createInterface({input: process.stdin, terminal: false});
  for await (const line of rl) {
    const parts = line.trim().split(/\s+/);
    if (!parts[0]) continue;
    const cmd = parts[0];
    if (cmd === 'quit') break;
    const key = parts.slice(1, 5).join(' ');
    if (cmd === 'prepare') {
      const dir = parts[5];
      const session = await ort.InferenceSession.create(path.join(dir, 'model.onnx'), {
        executionMode: 'sequential',
        intraOpNumThreads: threads,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
      });
      const x = readNpy(path.join(dir, 'X.npy'));
      const feeds = {X: new ort.Tensor('float32', x.data, x.shape)};
      sessions.set(key, {session, feeds});
      const out = await session.run(feeds, ['Y']);
      const y = out.Y.data;
      const ref = readNpy(path.join(dir, `Y_graphi_t${threads}.npy`)).data;
      let diff = y.length === ref.length ? 0 : Infinity;
      for (let i = 0; i < Math.min(y.length, ref.length); ++i)
        diff = Math.max(diff, Math.abs(y[i] - ref[i]));
      emit({kind: 'prepare', max_abs_diff: diff});
    } else if (cmd === 'run') {
      const budgetMs = Number(parts[5]), minSamples = Number(parts[6]);
      const s = sessions.get(key);
      if (!s) {
        emit({kind: 'error', message: `run before prepare: ${key}`});
        return 1;
      }
      await s.session.run(s.feeds, ['Y']);  // warm-up
      const samples = [];
      const start = process.hrtime.bigint();
      const elapsedMs = () => Number(process.hrtime.bigint() - start) * 1e-6;
      while (samples.length < 2000 && (samples.length < minSamples || elapsedMs() < budgetMs)) {
        const t0 = process.hrtime.bigint();
        await s.session.run(s.feeds, ['Y']);
        samples.push(Number(process.hrtime.bigint() - t0) * 1e-6);
      }
      emit({kind: 'run', ort: samples});
    } else {
      emit({kind: 'error', message: `unknown command ${cmd}`});
      return 1;
    }
  }
  return 0;
}

main().then((code) => process.exit(code), (e) => {
  emit({kind: 'error', message: String(e && e.stack || e)});
  process.exit(1);
});
