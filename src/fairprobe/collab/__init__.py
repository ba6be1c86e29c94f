"""fairprobe.collab"""
