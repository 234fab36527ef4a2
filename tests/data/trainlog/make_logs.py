#!/usr/bin/python3
"""Writes the training logs of test_trainlog.c in each framework's real layout (made-up
numbers, chosen so the expected throughput is exact by hand; see the test's comments).
Run from this folder: /usr/bin/python3 make_logs.py"""


def mmss(t):
    t = int(t)
    h, m, s = t // 3600, t // 60 % 60, t % 60
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def hfbar(n, total, t, rate):
    pct = int(100 * n / total)
    left = "?" if rate is None else mmss((total - n) / rate)
    r = "?it/s" if rate is None else (f"{rate:.2f}it/s" if rate >= 1 else f"{1 / rate:.2f}s/it")
    return f"{pct:3d}%|{'█' * (pct // 10):10s}| {n}/{total} [{mmss(t)}<{left}, {r}]"


HF_HEAD = """[INFO|trainer.py:2128] 2025-03-01 10:00:00,000 >> ***** Running training *****
[INFO|trainer.py:2129] 2025-03-01 10:00:00,000 >>   Num examples = 32,000
[INFO|trainer.py:2130] 2025-03-01 10:00:00,000 >>   Num Epochs = 1
[INFO|trainer.py:2131] 2025-03-01 10:00:00,000 >>   Instantaneous batch size per device = 4
[INFO|trainer.py:2134] 2025-03-01 10:00:00,000 >>   Total train batch size (w. parallel, distributed & accumulation) = 32
[INFO|trainer.py:2135] 2025-03-01 10:00:00,000 >>   Gradient Accumulation steps = 1
[INFO|trainer.py:2136] 2025-03-01 10:00:00,000 >>   Total optimization steps = 1,000
"""


def hf_session(out, steps, t0, end, final, resume=None):
    """Bar updates every 50 steps at 2 it/s; an evaluation (10 s) and a checkpoint (5 s)
    after step 500."""
    out.write(HF_HEAD)
    if resume is not None:
        out.write("[INFO|trainer.py:2160] 2025-03-02 09:00:00,000 >>   Continuing training from "
                  "checkpoint, will skip to saved global_step\n")
        out.write("[INFO|trainer.py:2161] 2025-03-02 09:00:00,000 >>   Continuing training from epoch 0\n")
        out.write(f"[INFO|trainer.py:2162] 2025-03-02 09:00:00,000 >>   Continuing training from global step {resume}\n")
    out.write(hfbar(0, 1000, 0, None))
    t = t0
    prev = 0
    for n in steps:
        if prev is not None:
            t += (n - prev) / 2.0
        if prev == 500:
            t += 15  # eval 10 s + checkpoint 5 s fell in this interval
        out.write("\r" + hfbar(n, 1000, t, 2.0))
        if n == 500:
            out.write("{'loss': 1.8312, 'grad_norm': 0.91, 'learning_rate': 2.5e-05, 'epoch': 0.5}\n")
            out.write(hfbar(n, 1000, t, 2.0) + "\n")
            out.write("  0%|          | 0/63 [00:00<?, ?it/s]\r 51%|█████     | 32/63 [00:05<00:05,  6.30it/s]\r"
                      "100%|██████████| 63/63 [00:10<00:00,  6.30it/s]\n")
            out.write("{'eval_loss': 1.7421, 'eval_runtime': 10.0, 'eval_samples_per_second': 50.4, "
                      "'eval_steps_per_second': 6.3, 'epoch': 0.5}\n")
            out.write("[INFO|trainer.py:3410] 2025-03-01 10:04:20,000 >> Saving model checkpoint to out/checkpoint-500\n")
        prev = n
    if end:
        out.write("\r" + hfbar(1000, 1000, t, 1.94))  # tqdm's close repeats the last update
        out.write("\n")
    if final:
        out.write(final + "\n")
    return t


# no resume: steps 50..1000; throughput 64 samples/s (2 it/s x 32) exactly
with open("hf_500w.log", "w") as f:
    t = hf_session(f, range(50, 1001, 50), 0, True, None)
    f.write("{'train_runtime': %.1f, 'train_samples_per_second': %.3f, 'train_steps_per_second': "
            "%.3f, 'train_loss': 1.9, 'epoch': 1.0}\n" % (t, 32000 / t, 1000 / t))

# resumed: session 1 dies after step 600; session 2 resumes from checkpoint-500 (first update
# at step 510 after 5 s of skipping data), then 2 it/s to 1000 (250 s); HF prints
# train_samples_per_second = 1000 x 32 / 250 = 128 (every step counted against this session)
with open("hf_500w_resumed.log", "w") as f:
    hf_session(f, range(50, 601, 50), 0, False, None)
    f.write("\nTraceback (most recent call last):\nRuntimeError: NCCL error: unhandled system error\n")
    f.write(HF_HEAD.replace("2025-03-01", "2025-03-02"))
    f.write("[INFO|trainer.py:2160] 2025-03-02 09:00:00,000 >>   Continuing training from checkpoint, will skip to saved global_step\n")
    f.write("[INFO|trainer.py:2161] 2025-03-02 09:00:00,000 >>   Continuing training from epoch 0\n")
    f.write("[INFO|trainer.py:2162] 2025-03-02 09:00:00,000 >>   Continuing training from global step 500\n")
    f.write(hfbar(0, 1000, 0, None))
    t = 5.0
    f.write("\r" + hfbar(510, 1000, t, None))
    for n in list(range(560, 1000, 50)) + [1000]:
        t += (n - (n - 50 if n != 1000 else 960)) / 2.0
        f.write("\r" + hfbar(n, 1000, t, 2.0))
    f.write("\n{'train_runtime': 250.0, 'train_samples_per_second': 128.0, 'train_steps_per_second': 4.0, "
            "'train_loss': 1.7, 'epoch': 1.0}\n")

# the same resumed run without a bar (disable_tqdm): only the final dict
with open("hf_resumed_nobar.log", "w") as f:
    f.write(HF_HEAD)
    f.write("[INFO|trainer.py:2162] 2025-03-02 09:00:00,000 >>   Continuing training from global step 500\n")
    f.write("{'loss': 1.61, 'grad_norm': 0.8, 'learning_rate': 1e-05, 'epoch': 0.75}\n")
    f.write("{'train_runtime': 250.0, 'train_samples_per_second': 128.0, 'train_steps_per_second': 4.0, "
            "'train_loss': 1.7, 'epoch': 1.0}\n")

# tqdm: 2 it/s for 20 steps (records every 2 steps), then 15 s/it for 10 steps
with open("tqdm_sit.log", "w") as f:
    f.write("train:   0%|          | 0/100 [00:00<?, ?it/s]")
    t = 0
    for n in range(2, 21, 2):
        t += 1
        f.write("\r" + "train: " + hfbar(n, 100, t, 2.0))
    for n in range(21, 31):
        t += 15
        f.write("\r" + "train: " + hfbar(n, 100, t, 1 / 15))
    f.write("\n")


def titan(step, ts, tps, rank=None, wps=False, colour=True):
    c = (lambda k: f"\x1b[{k}m") if colour else (lambda k: "")
    pre = f"[rank{rank}]:" if rank is not None else ""
    key = "wps" if wps else "tps"
    return (f"{pre}[titan] {ts} - root - INFO - {c(31)}step: {step:2d}  {c(32)}loss:  7.1000  "
            f"{c(33)}memory: 30.50GiB(38.60%)  {c(34)}{key}: {tps:,}  {c(36)}tflops: 130.30  "
            f"{c(35)}mfu: 40.50%{c(39)}")


def ts(sec):
    h, m, s = int(sec) // 3600, int(sec) // 60 % 60, sec % 60
    return f"2025-01-01 {h:02d}:{m:02d}:{s:06.3f}".replace(".", ",")


# torchtitan, 8 ranks: steps 10..100 every 10 steps, 10 s apart at 8,000 tps; a checkpoint
# after step 50 (the next interval takes 14 s, tps 5,714); each rank prints every line
def titan_lines(ranks):
    out = []
    t = 0.0
    for k, step in enumerate(range(10, 101, 10)):
        if step > 10:
            t += 14.0 if step == 60 else 10.0
        tps = 5714 if step == 60 else 8000
        for r in ranks:
            out.append(titan(step, ts(43200 + t), tps, rank=r))
        if step == 50:
            for r in ranks:
                out.append(f"[rank{r}]:[titan] {ts(43200 + t)} - root - INFO - Saving the checkpoint (or staging if async is enabled).")
                out.append(f"[rank{r}]:[titan] {ts(43200 + t + 3.9)} - root - INFO - Finished saving the checkpoint (or staging if async is enabled)in 3.90 seconds.")
    return out


with open("titan_8rank.log", "w") as f:
    lines = titan_lines(range(8))
    # ranks' lines interleave out of order within a step
    for i in range(0, len(lines), 8):
        blk = lines[i:i + 8]
        f.write("\n".join(blk[::-1] if (i // 8) % 2 else blk) + "\n")
with open("titan_rank0.log", "w") as f:
    f.write("\n".join(titan_lines([0])) + "\n")

# torchtitan of early 2024: wps, no rank prefix, a 2-day preemption pause between steps 40
# and 50 with the process alive (a stalled job), and a truncated last line
with open("titan_wps_gap.log", "w") as f:
    t = 0.0
    for step in range(10, 101, 10):
        if step > 10:
            t += 172800.0 if step == 50 else 10.0
        f.write(titan(step, ts(43200 + t).replace("2025-01-01", "2024-03-0%d" % (1 + int(t // 86400))) if False else
                      f"2024-03-0{1 + int((43200 + t) // 86400)} " + ts((43200 + t) % 86400)[11:], 7000, wps=True) + "\n")
    f.write(titan(110, "2024-03-03 12:01:", 7000, wps=True)[:60])  # cut off mid-write


def mega(it, consumed, ms, loss="8.1", ts_=None):
    pre = f" [{ts_}]" if ts_ else ""
    return (f"{pre} iteration {it:8d}/     100 | consumed samples: {consumed:12d} | elapsed time per "
            f"iteration (ms): {ms} | learning rate: 3.000000E-04 | global batch size:   128 | "
            f"lm loss: {loss} | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | "
            f"number of nan iterations:   0 |")


# Megatron-core: an evaluation in 30->40, a checkpoint in 40->50, the job killed after 60 and
# resumed from the iteration-40 checkpoint
with open("megatron_resume.log", "w") as f:
    f.write(mega(10, 1280, "1500.0", ts_="2025-08-11 06:40:31") + "\n")
    f.write(mega(20, 2560, "1400.0", ts_="2025-08-11 06:40:45") + "\n")
    f.write(mega(30, 3840, "1400.0", ts_="2025-08-11 06:40:59") + "\n")
    f.write("-" * 100 + "\n validation loss at iteration 30 | lm loss value: 8.100000E+00 | lm loss PPL: 3.294468E+03 |\n" + "-" * 100 + "\n")
    f.write(mega(40, 5120, "1900.0", ts_="2025-08-11 06:41:18") + "\n")
    f.write("saving checkpoint at iteration      40 to /ckpt/run-x in torch_dist format\n")
    f.write("  successfully saved checkpoint from iteration      40 to /ckpt/run-x [ t 1/1, p 1/1 ]\n")
    f.write(mega(50, 6400, "1600.0", ts_="2025-08-11 06:41:34") + "\n")
    f.write(mega(60, 7680, "1400.0", ts_="2025-08-11 06:41:48") + "\n")
    f.write("srun: error: node17: task 3: Killed\n")
    f.write(" loading checkpoint from /ckpt/run-x at iteration 40\n")
    f.write("  successfully loaded checkpoint from /ckpt/run-x [ t 1/1, p 1/1 ] at iteration 40\n")
    f.write(mega(50, 6400, "3000.0", ts_="2025-08-12 02:10:30") + "\n")
    f.write(mega(60, 7680, "1400.0", ts_="2025-08-12 02:10:44") + "\n")
    f.write(mega(70, 8960, "1400.0", ts_="2025-08-12 02:10:58") + "\n")

# every elapsed time nan: no throughput
with open("megatron_nan.log", "w") as f:
    for k in range(1, 4):
        f.write(mega(10 * k, 1280 * k, "nan", loss="nan") + "\n")


def dts(sec):
    h, m, s = int(sec) // 3600, int(sec) // 60 % 60, sec % 60
    ms = int(round((s - int(s)) * 1000))
    return f"{h:02d}:{m:02d}:{int(s):02d},{ms:03d}"


# DeepSpeed >= 0.9 ThroughputTimer; train_batch_size 64; 10 steps take 25.6 s (25 samples/s);
# an fp16 overflow (skipped 4 -> 5) in 20->30; a checkpoint (10 s) in 30->40
with open("deepspeed_new.log", "w") as f:
    f.write("[2023-11-07 01:50:00,000] [INFO] [config.py:972:print] DeepSpeedEngine configuration:\n")
    f.write("[2023-11-07 01:50:00,000] [INFO] [config.py:976:print]   train_batch_size ............. 64\n")
    f.write("[2023-11-07 01:50:00,000] [INFO] [config.py:976:print]   train_micro_batch_size_per_gpu  2\n")
    t = 6900.0
    skipped = 4
    for k, step in enumerate(range(10, 61, 10)):
        if step > 10:
            t += 35.6 if step == 40 else 25.6
        if step == 30:
            skipped = 5
        f.write(f"[2023-11-07 01:{dts(t)[3:]}] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, "
                f"skipped={skipped}, lr=[4.99e-05], mom=[(0.9, 0.95)]\n")
        f.write(f"[2023-11-07 01:{dts(t)[3:]}] [INFO] [timer.py:260:stop] epoch=0/micro_step={4 * step}/"
                f"global_step={step}, RunningAvgSamplesPerSec=25.02, CurrSamplesPerSec=25.7, "
                f"MemAllocated=4.32GB, MaxMemAllocated=38.49GB\n")
        if step == 30:
            f.write(f"[2023-11-07 01:{dts(t)[3:]}] [INFO] [logging.py:96:log_dist] [Rank 0] [Torch] "
                    f"Checkpoint global_step30 is about to be saved!\n")

# DeepSpeed 0.7: "E/N, RunningAvgSamplesPerSec=", every rank prints (2 ranks, no prefix);
# train_batch_size 16, 10 steps in 0.8 s (200 samples/s)
with open("deepspeed_old.log", "w") as f:
    f.write("[2022-08-29 06:58:40,000] [INFO] [config.py:1063:print]   train_batch_size ............. 16\n")
    for k, step in enumerate(range(10, 41, 10)):
        t = 6 * 3600 + 58 * 60 + 50 + 0.8 * k
        for r in range(2):
            f.write(f"[2022-08-29 {dts(t)}] [INFO] [timer.py:198:stop] 0/{step}, RunningAvgSamplesPerSec="
                    f"198.2, CurrSamplesPerSec=201.5, MemAllocated=0.36GB, MaxMemAllocated=15.06GB\n")


def lbar(desc, n, total, t, rate, post=""):
    pct = int(100 * n / total)
    left = "?" if rate is None else mmss((total - n) / rate)
    r = "?it/s" if rate is None else f"{rate:.2f}it/s"
    return f"{desc}: {pct:3d}%|{'█' * (pct // 10):10s}| {n}/{total} [{mmss(t)}<{left}, {r}{post}]"


# Lightning 2.x: two epochs of 100 batches at 5 it/s, validation and a checkpoint between
with open("lightning2.log", "w") as f:
    f.write("GPU available: True (cuda), used: True\nLOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0]\n")
    for ep in range(2):
        f.write(lbar(f"Epoch {ep}", 0, 100, 0, None))
        for n in range(10, 101, 10):
            f.write("\r" + lbar(f"Epoch {ep}", n, 100, n / 5, 5.0, ", v_num=0, train_loss=2.31"))
        f.write("\nValidation: |          | 0/? [00:00<?, ?it/s]\r" + lbar("Validation DataLoader 0", 20, 20, 1, 18.0) + "\n")
        f.write("\r" + lbar(f"Epoch {ep}", 100, 100, 21, 4.76, ", v_num=0, train_loss=2.31, val_loss=2.10") + "\n")
        f.write(f"Epoch {ep}, global step {100 * (ep + 1)}: 'val_loss' reached 2.10000 (best 2.10000), saving model to "
                f"'/ckpt/epoch={ep}-step={100 * (ep + 1)}.ckpt' as top 1\n")
    f.write("`Trainer.fit` stopped: `max_epochs=2` reached.\n")

# Lightning 1.x: the epoch bar's total counts the validation batches too (100 + 20) and goes on
# counting during validation
with open("lightning1.log", "w") as f:
    f.write("GPU available: True, used: True\n")
    f.write(lbar("Epoch 0", 0, 120, 0, None))
    for n in range(10, 101, 10):
        f.write("\r" + lbar("Epoch 0", n, 120, n / 5, 5.0, ", loss=2.5, v_num=0"))
    f.write("\nValidating: 0it [00:00, ?it/s]\r" + lbar("Validating", 10, 20, 1, 10.0))
    f.write("\r" + lbar("Epoch 0", 110, 120, 21, 5.2, ", loss=2.5, v_num=0"))
    f.write("\r" + lbar("Validating", 20, 20, 2, 10.0))
    f.write("\r" + lbar("Epoch 0", 120, 120, 22, 5.45, ", loss=2.5, v_num=0") + "\n")


def nano(it, ms, tps, dp=0):
    return (f"01/15/2025 10:{it // 60:02d}:{it % 60:02d} [INFO|DP={dp}|PP=0|TP=0|lm_head]: iteration: {it} / 100 | "
            f"consumed_tokens: {it * 131}K | elapsed_time_per_iteration_ms: {ms} | tokens_per_sec: {tps} | "
            f"tokens_per_sec_per_gpu: 16.4K | global_batch_size: 64 | lm_loss: 10.9 | lr: 0.0001 | "
            f"model_tflops_per_gpu: 240 | hardware_tflops_per_gpu: 240 | grad_norm: 2.9")


# nanotron with two data-parallel replicas logging, sequence length known (64 x 2048 tokens a
# step, 1 s a step = 131,072 tokens/s), a checkpoint in 3->4 (the step takes 3 s)
with open("nanotron_dp.log", "w") as f:
    f.write("01/15/2025 10:00:00 [INFO|DP=0|PP=0|TP=0]: [Start training] datetime: 2025-01-15 10:00:00 | "
            "mbs: 4 | grad_accum: 2 | global_batch_size: 64 | sequence_length: 2048 | train_steps: 100 | "
            "start_iteration_step: 0 | consumed_train_samples: 0\n")
    for it in range(1, 7):
        ms = "3K" if it == 4 else "1K"
        for dp in range(2):
            f.write(nano(it, ms, "43.7K" if it == 4 else "131K", dp) + "\n")
        if it == 3:
            f.write("01/15/2025 10:00:03 [INFO|DP=0|PP=0|TP=0]: Saving checkpoint at /ckpt/3\n")

# torchtitan 2025 (tps, validation every 20 steps: "validate step:")
with open("titan_validate.log", "w") as f:
    t = 0.0
    for step in range(10, 61, 10):
        if step > 10:
            t += 16.0 if step == 30 else 10.0
        f.write(titan(step, ts(43200 + t), 5000 if step == 30 else 8000, colour=False) + "\n")
        if step == 20:
            f.write(f"[titan] {ts(43200 + t + 6)} - root - INFO - validate step: 20  loss:  7.0500  memory: 31.00GiB(39.20%)\n")


# the resumed run of hf_500w_resumed.log with the library's default verbosity (WARNING): no
# INFO lines at all, no resume line; the bar jumps from 0 to 510 in 5 s. Unit: steps (2 it/s).
with open("hf_resumed_quiet.log", "w") as f:
    f.write(hfbar(0, 1000, 0, None))
    t = 5.0
    f.write("\r" + hfbar(510, 1000, t, None))
    for n in list(range(560, 1000, 50)) + [1000]:
        t += (n - (n - 50 if n != 1000 else 960)) / 2.0
        f.write("\r" + hfbar(n, 1000, t, 2.0))
    f.write("\n{'train_runtime': 250.0, 'train_samples_per_second': 128.0, 'train_steps_per_second': 4.0, "
            "'train_loss': 1.7, 'epoch': 1.0}\n")


# DeepSpeed-Chat step 3: print_throughput every step; 64 samples in 0.8 s (80/s), one nan line
with open("dschat.log", "w") as f:
    f.write("[2023-06-01 10:00:00,000] [INFO] [config.py:960:print_user_config]   json = {\"train_batch_size\": 64}\n")
    for k in range(5):
        lat = "nan" if k == 2 else "0.80"
        f.write(f"Epoch: 0 | Step: {k} | PPO Epoch: 1 | Actor Loss: 0.1 | Critic Loss: 0.2\n")
        f.write(f"End-to-End => Latency: {lat}s, TFLOPs: 105.20, Samples/sec: 80.00, Time/seq 0.01s, "
                f"Batch Size: 64, Total Seq. Length: 512\n")
