"""Rollout: playing the planned jobs against the target model (play) with the user simulator (simulator)."""
