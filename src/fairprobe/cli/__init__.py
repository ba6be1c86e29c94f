"""fairprobe.cli"""
