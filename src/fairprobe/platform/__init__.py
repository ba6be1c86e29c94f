"""fairprobe.platform"""
