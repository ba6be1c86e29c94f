"""fairprobe.sequential"""
