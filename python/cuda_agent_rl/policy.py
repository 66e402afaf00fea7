"""The policy of the GRPO demonstration: a small causal transformer (transformers' GPT-2 classes,
randomly initialised) that reads a task token and writes one token per arm slot.

Sequence: ``<bos> <task:NAME> a_1 … a_k`` where ``a_i`` is one of slot *i*'s option tokens.
Decoding is slot-constrained: at position *i* only slot *i*'s tokens are allowed (the others'
logits are masked), so every sample is a well-formed arm and log-probabilities are taken over the
allowed tokens only — the same masking in sampling and in the update.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import GPT2Config, GPT2LMHeadModel

from cuda_agent_rl.arms import SLOTS


@dataclass
class Vocabulary:
    """Token ids: <bos>, one per task, then every slot's options in order."""

    tasks: list[str]

    def __post_init__(self) -> None:
        self.bos = 0
        self.task_ids = {name: 1 + index for index, name in enumerate(self.tasks)}
        self.slot_ranges: list[tuple[int, int]] = []
        start = 1 + len(self.tasks)
        for _, options in SLOTS:
            self.slot_ranges.append((start, start + len(options)))
            start += len(options)
        self.size = start


class ArmPolicy(torch.nn.Module):
    """π(arm | task) as a tiny GPT-2; ``sample`` draws arms, ``log_probs`` scores them."""

    def __init__(self, tasks: list[str], layers: int = 2, width: int = 64, heads: int = 4, seed: int = 0):
        super().__init__()
        self.vocab = Vocabulary(tasks)
        torch.manual_seed(seed)
        config = GPT2Config(vocab_size=self.vocab.size, n_positions=2 + len(SLOTS), n_embd=width,
                            n_layer=layers, n_head=heads, bos_token_id=0, eos_token_id=0,
                            # No dropout: sampling and the update must score arms alike.
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        self.model = GPT2LMHeadModel(config)

    def _prefix(self, task: str, count: int, device: torch.device) -> torch.Tensor:
        row = torch.tensor([self.vocab.bos, self.vocab.task_ids[task]], device=device)
        return row.unsqueeze(0).repeat(count, 1)

    def _slot_logits(self, logits: torch.Tensor, slot: int) -> torch.Tensor:
        low, high = self.vocab.slot_ranges[slot]
        return logits[..., low:high]

    @torch.no_grad()
    def sample(self, task: str, count: int, greedy: bool = False) -> torch.Tensor:
        """``count`` arms for ``task``: a (count, slots) tensor of option indices."""
        device = next(self.parameters()).device
        tokens = self._prefix(task, count, device)
        choices = []
        for slot in range(len(SLOTS)):
            logits = self._slot_logits(self.model(tokens).logits[:, -1, :], slot)
            if greedy:
                choice = logits.argmax(dim=-1)
            else:
                choice = torch.distributions.Categorical(logits=logits).sample()
            choices.append(choice)
            tokens = torch.cat([tokens, (choice + self.vocab.slot_ranges[slot][0]).unsqueeze(1)], dim=1)
        return torch.stack(choices, dim=1)

    def log_probs(self, task: str, choices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-sample log π(arm | task) summed over slots, and the mean per-slot entropy."""
        device = next(self.parameters()).device
        choices = choices.to(device)
        offsets = torch.tensor([low for low, _ in self.vocab.slot_ranges], device=device)
        tokens = torch.cat([self._prefix(task, choices.shape[0], device), choices + offsets], dim=1)
        logits = self.model(tokens).logits  # position p predicts token p + 1
        total = torch.zeros(choices.shape[0], device=device)
        entropy = torch.zeros((), device=device)
        for slot in range(len(SLOTS)):
            slot_logits = self._slot_logits(logits[:, 1 + slot, :], slot)
            distribution = torch.distributions.Categorical(logits=slot_logits)
            total = total + distribution.log_prob(choices[:, slot])
            entropy = entropy + distribution.entropy().mean()
        return total, entropy / len(SLOTS)
