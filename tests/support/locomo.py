"""A LoCoMo-shaped conversation small enough to score in a test, in the benchmark's own file
format (:mod:`lossgate.evaluation.locomo` reads it)."""

from __future__ import annotations


def conversation() -> list[dict]:
    """One LoCoMo sample (``conv-test``): Ann and Ben's first session, where the answers are,
    then forty turns of a later one; five questions, of which the harness scores three (an
    adversarial one and one whose evidence names no turn are left out)."""
    turns = [
        {"speaker": "Ann" if i % 2 == 0 else "Ben", "dia_id": f"D1:{i + 1}", "text": text}
        for i, text in enumerate(
            [
                "Hi Ben, how was your week?",
                "Busy! I finally finished painting the blue kitchen.",
                "Nice. I started learning the cello last month.",
                "Cool, which teacher do you have?",
                "Her name is Margit, she plays in the city orchestra.",
                "I should try that some day.",
            ]
        )
    ]
    later = [
        {"speaker": "Ann", "dia_id": f"D2:{i + 1}", "text": f"just checking in about the weekend ({i})"}
        for i in range(40)
    ]
    return [
        {
            "sample_id": "conv-test",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": turns,
                "session_2_date_time": "10:00 am on 9 June, 2023",
                "session_2": later,
            },
            "qa": [
                {"question": "What did Ben paint?", "answer": "the kitchen", "evidence": ["D1:2"], "category": 4},
                {"question": "Who teaches Ann the cello?", "answer": "Margit", "evidence": ["D1:5"], "category": 1},
                {
                    "question": "When did Ann start the cello?",
                    "answer": "April 2023",
                    "evidence": ["D1:3"],
                    "category": 2,
                },
                {"question": "What is Ann's adversarial hobby?", "evidence": ["D1:1"], "category": 5},
                {"question": "Bad evidence", "answer": "x", "evidence": ["D:9:9"], "category": 4},
            ],
        }
    ]
