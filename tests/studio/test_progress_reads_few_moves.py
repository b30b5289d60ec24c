"""Issue 47: the Progress tab took 3.3 s on a library of 10^5 games: it read every one of the person's
games move by move (2,000 of them) to count the person's moves, reviewed or not. Now only a reviewed
game's moves are read; a shared game's moves are counted per player by the database."""

from __future__ import annotations

from engine.store import GameStore
from studio.commands.bench_store import synthetic_games
from studio.services.progress import progress


def test_progress_reads_the_moves_of_reviewed_games_only(data_dir, monkeypatch):
    with GameStore.open(data_dir) as store:
        store.insert_games(synthetic_games(600, 10, seed=4))
        every = store.list_games()
        loads: list[int] = []
        original = GameStore.load_game

        def counting(self, game_id):
            loads.append(game_id)
            return original(self, game_id)

        monkeypatch.setattr(GameStore, "load_game", counting)
        result = progress(store)
    mine = [g for g in every if any(p.is_human for p in g.players)]
    assert len(result.games) == len(mine) > 50
    assert loads == []  # none is reviewed: no game read move by move
    by_id = {g.id: g for g in every}
    for gp in result.games:
        g = by_id[gp.game_id]
        # the synthetic shared game: the person made the first half of the moves, the agent the rest
        want = g.n_moves // 2 if g.source == "mixed" else g.n_moves
        assert gp.moves == want, (g.id, g.source)
    assert sum(g.source == "mixed" for g in mine) > 10
    assert result.unreviewed == [gp.game_id for gp in result.games]
