"""Policy input features (agents/features.py): computed from the observation alone, and right."""

from __future__ import annotations

import numpy as np

from mt_env import Deal, Match, RulesConfig
from mt_env.agents.features import PAIR_COLS, TILE_COLS, TRAIN_COLS, Featurizer, pair_layout
from mt_env.observation import ObservationEncoder
from mt_env.tiles import tile_set

RULES = RulesConfig(num_seats=2, max_pip=6, num_rounds=1)
TS = tile_set(6)
# Seat 0 holds the chain 6|1 1|2 2|4 from the engine 6|6, plus 0|5; seat 1 holds 6|3 3|3.
HANDS = [[(6, 1), (1, 2), (2, 4), (0, 5)], [(6, 3), (3, 3)]]


def _match() -> Match:
    used = {tuple(sorted(t)) for h in HANDS for t in h} | {(6, 6)}
    rest = [t for t in TS.tiles if t not in used]
    return Match(RULES, deals=[Deal(hands=HANDS, boneyard=rest, engine=6, start_seat=0)])


def test_pair_features_describe_the_plan_and_what_a_play_leaves_open():
    match = _match()
    enc = ObservationEncoder(RULES)
    obs = enc.encode(match, 0)
    row = Featurizer(RULES, "pairs")(obs[None])[0]
    lay = pair_layout(RULES)
    t, n1 = lay.num_tiles, lay.num_trains
    tile = row[lay.tile].reshape(t, TILE_COLS)
    train = row[lay.train].reshape(n1, TRAIN_COLS)
    pair = row[lay.pair].reshape(t, n1, PAIR_COLS)
    i61, i12, i24, i05 = (TS.id_of(x) for x in [(6, 1), (1, 2), (2, 4), (0, 5)])
    assert np.flatnonzero(tile[:, 0]).tolist() == sorted([i61, i12, i24, i05])  # in hand
    assert np.flatnonzero(tile[:, 1]).tolist() == sorted([i61, i12, i24])  # on the chain
    assert np.flatnonzero(tile[:, 2]).tolist() == [i61]  # the chain starts with 6|1
    assert tile[i61, 3] == 1.0 and tile[i24, 3] < tile[i12, 3] < 1.0
    assert train[0, 0] == 1 and train[2, 1] == 1 and train[1, 2] == 1  # own, Mexican, other
    # 6|1 on the own train leaves 1 open: one other hand tile (1|2) matches; unseen tiles
    # bearing a 1 are the 7 of the set minus 6|1 and 1|2 in hand: 5, scaled by 1/7.
    assert pair[i61, 0, 0] == 1.0
    assert pair[i61, 0, 1] == 1.0 / RULES.hand_size
    assert pair[i61, 0, 2] == 5.0 / 7.0
    assert pair[i05, 0, 0] == 0.0  # 0|5 does not join 6


def test_the_fourth_pair_column_counts_other_seats_void_in_the_end_a_play_leaves():
    """Observation ``voids`` row r = relative seat r: only the other seats' rows count,
    divided by n - 1; the observer's own row (what the others know of it) does not."""
    enc = ObservationEncoder(RULES)
    obs = enc.encode(_match(), 0)
    voids = enc.unpack(obs)["voids"]  # a view: writes go into obs
    voids[0, 1] = 1.0  # the others know the observer lacks 1s: not the pair feature
    lay = pair_layout(RULES)
    i61 = TS.id_of((6, 1))

    def col3(o):
        row = Featurizer(RULES, "pairs")(o[None])[0]
        return row[lay.pair].reshape(lay.num_tiles, lay.num_trains, PAIR_COLS)[:, :, 3]

    assert not col3(obs).any()
    voids[1, 1] = 1.0  # seat 1 is known to hold no 1: 6|1 leaves it a dead end
    pair = col3(obs)
    assert pair[i61, 0] == pair[i61, 2] == 1.0  # 6|1 on the own or the Mexican train leaves 1
    i24, i05 = TS.id_of((2, 4)), TS.id_of((0, 5))
    assert pair[i24].max() == pair[i05].max() == 0.0  # they would leave 2 or 4, 0 or 5
    voids[1, 1] = 0.0
    voids[1, 2] = 1.0  # 2|4 joins no end here: the column reads the end its low pip leaves
    assert col3(obs)[i61].max() == 0.0 and col3(obs)[i24].max() == 1.0


def test_features_ignore_hidden_information():
    """Same public position, different hidden tiles: identical policy inputs for seat 0."""
    a = _match()
    used = {tuple(sorted(x)) for h in HANDS for x in h} | {(6, 6)}
    rest = [x for x in TS.tiles if x not in used]
    # Swap seat 1's 3|3 with a boneyard tile and reverse the boneyard: hidden changes only.
    swap = rest[0]
    hands_b = [HANDS[0], [(6, 3), swap]]
    rest_b = [(3, 3)] + rest[1:][::-1]
    b = Match(RULES, deals=[Deal(hands=hands_b, boneyard=rest_b, engine=6, start_seat=0)])
    enc = ObservationEncoder(RULES)
    for features in ("planning", "pairs"):
        f = Featurizer(RULES, features)
        np.testing.assert_array_equal(f(enc.encode(a, 0)[None]), f(enc.encode(b, 0)[None]))


def test_a_batch_featurizes_each_row_as_it_would_alone():
    """Rollouts featurize all their games' decisions in one batch: every row must be what
    that observation alone gives, bit for bit (2-8 seats, positions of random play)."""
    import random

    for seats in (2, 4, 8):
        config = RulesConfig(num_seats=seats, num_rounds=1)
        enc, f = ObservationEncoder(config), Featurizer(config, "pairs")
        rng, obs = random.Random(seats), []
        for game in range(2):
            match = Match(config, seed=game)
            while not match.is_over:
                obs.append(enc.encode(match, match.state.seat))
                moves = match.state.legal_moves()
                match.apply(moves[rng.randrange(len(moves))])
        batch = f(np.stack(obs))
        alone = np.concatenate([f(o[None]) for o in obs])
        assert batch.dtype == np.float32 and np.array_equal(batch, alone)
