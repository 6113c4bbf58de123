"""Statistics shared by every suite: bootstrap intervals and paired differences."""
