"""Clinician accounts: who may log in, with what password and role, and their session generations.

python -m clincite.users add 张医生        # the command line (clincite/users/__main__.py)
"""
